import Foundation
import Logging
import NetExtCore
import NetExtLinux

/// What `netext-server tunnel` changes in its network namespace so clients reach the networks
/// behind it: IP forwarding (`"forward": true`) and, for networks that have no route back to the
/// client pools, masquerading (`"masquerade": ["eth1"]`: source NAT to the outgoing interface's
/// address, in an nftables table of the server's own). Everything is put back on stop; a table
/// left by a crashed server is replaced at start. `netext-server relay` uses it too, for its
/// connect-ip interface.
package struct ServerForwarding {
    let interface: String
    let ipv4Pool: IPPrefix?
    let ipv6Pool: IPPrefix?
    let forward: Bool
    let masquerade: [String]
    private(set) var savedSysctls: [String: String] = [:]
    private(set) var installedTable = false

    /// `inet netext_srv_<TUN interface>`: one table per server instance.
    package var tableName: String { "netext_srv_" + interface.map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined() }

    init(configuration: TunnelServerConfiguration, interface: String) {
        self.init(
            interface: interface, ipv4Pool: configuration.ipv4Pool.flatMap { try? IPPrefix($0) }, ipv6Pool: configuration.ipv6Pool.flatMap { try? IPPrefix($0) },
            forward: configuration.forward ?? false, masquerade: configuration.masquerade ?? [])
    }

    /// Forwarding for `interface`'s pools (always when `masquerade` names interfaces).
    package init(interface: String, ipv4Pool: IPPrefix?, ipv6Pool: IPPrefix?, forward: Bool, masquerade: [String]) {
        self.interface = interface
        self.ipv4Pool = ipv4Pool
        self.ipv6Pool = ipv6Pool
        self.masquerade = masquerade
        self.forward = forward || !masquerade.isEmpty
    }

    /// The nftables ruleset for masquerading (nft -f syntax).
    static func ruleset(table: String, ipv4Pool: IPPrefix?, ipv6Pool: IPPrefix?, interfaces: [String]) -> String {
        let names = interfaces.map { "\"\($0)\"" }.joined(separator: ", ")
        var lines = [
            "table inet \(table) {",
            "  chain postrouting {",
            "    type nat hook postrouting priority srcnat; policy accept;",
        ]
        if let pool = ipv4Pool { lines.append("    ip saddr \(pool) oifname { \(names) } masquerade") }
        if let pool = ipv6Pool { lines.append("    ip6 saddr \(pool) oifname { \(names) } masquerade") }
        lines += ["  }", "}"]
        return lines.joined(separator: "\n") + "\n"
    }

    package mutating func apply(logger: Logger) throws(NetExtError) {
        if forward {
            var keys = ["net.ipv4.ip_forward"]
            if ipv6Pool != nil { keys.append("net.ipv6.conf.all.forwarding") }
            for key in keys {
                let path = "/proc/sys/" + key.replacingOccurrences(of: ".", with: "/")
                guard let old = try? String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) else {
                    throw NetExtError(.connectionFailed, "cannot read \(key)")
                }
                guard (try? "1\n".write(toFile: path, atomically: false, encoding: .utf8)) != nil else {
                    throw NetExtError(.connectionFailed, "cannot enable \(key) (needs root in the server's namespace)")
                }
                savedSysctls[path] = old
            }
        }
        guard !masquerade.isEmpty else { return }
        guard let nft = CommandRunner.nftPath else { throw NetExtError(.connectionFailed, "'masquerade' needs nft (apt-get install nftables)") }
        _ = CommandRunner.run(nft, ["delete", "table", "inet", tableName])  // a crashed server's
        let result = CommandRunner.run(nft, ["-f", "-"], input: Self.ruleset(table: tableName, ipv4Pool: ipv4Pool, ipv6Pool: ipv6Pool, interfaces: masquerade))
        guard result.status == 0 else { throw NetExtError(.connectionFailed, "nft refused the masquerade rules: \(result.output)") }
        installedTable = true
        logger.info("forwarding with masquerade", metadata: ["table": "inet \(tableName)", "interfaces": "\(masquerade)"])
    }

    package mutating func remove() {
        if installedTable, let nft = CommandRunner.nftPath {
            _ = CommandRunner.run(nft, ["delete", "table", "inet", tableName])
            installedTable = false
        }
        for (path, value) in savedSysctls { try? (value + "\n").write(toFile: path, atomically: false, encoding: .utf8) }
        savedSysctls = [:]
    }
}
