import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// Applies and removes network plans. The real one runs iproute2's `ip`; tests can record.
public protocol NetworkApplier: Sendable {
    /// Applies every step of the plan; on failure undoes what it did and throws naming the step.
    func apply(_ plan: NetworkPlan) throws(NetExtError)
    /// Turns `previous` (in force on the same interface) into `plan`, changing only what
    /// differs (`NetworkPlan.changeCommands(from:)`); on failure puts `previous` back and throws
    /// naming the step.
    func apply(_ plan: NetworkPlan, replacing previous: NetworkPlan) throws(NetExtError)
    /// Removes the plan's rules and routes (best effort: missing pieces are not errors).
    func teardown(_ plan: NetworkPlan)
    /// Removes rules and routes a crashed netextd may have left in its priority and table range.
    func removeStale(tables: ClosedRange<Int>, priorities: ClosedRange<Int>)
    /// The MTU of the interface the route to `address` leaves through, if it can be told.
    func underlyingMTU(toward address: String) -> Int?
    /// The subnets of the machine's own interfaces (not netextd's tunnels), for
    /// `excludeLocalNetworks`.
    func localNetworks() -> [IPPrefix]
    /// Installs (or replaces) the traffic guard; with no active member, removes it.
    func applyGuard(_ trafficGuard: TrafficGuard) throws(NetExtError)
    /// Installs (or replaces) the flow steering's table; with no member, removes it.
    func applySteering(_ steering: FlowSteering) throws(NetExtError)
    /// Installs the DNS guard (other programs' DNS refused); inactive, removes it.
    func applyDNSGuard(_ dnsGuard: DNSGuard) throws(NetExtError)
    /// Creates a tunnel interface (a TUN device named after `pattern`, `netext%d`) and returns
    /// its descriptor and name; the interface lives until the descriptor is closed.
    func openTunnelInterface(pattern: String) throws(NetExtError) -> (fd: Int32, name: String)
}

extension NetworkApplier {
    public func openTunnelInterface(pattern: String) throws(NetExtError) -> (fd: Int32, name: String) {
        // With offloads: the provider's PacketFlow sees them on the descriptor and either
        // segments for itself (fast data paths) or hands out ordinary packets.
        do {
            let opened = try TunDevice.open(pattern: pattern, offload: true)
            return (opened.fd, opened.name)
        } catch {
            throw NetExtError(.connectionFailed, "cannot create a TUN interface: \(error)")
        }
    }

    public func localNetworks() -> [IPPrefix] { [] }
    public func applyGuard(_ trafficGuard: TrafficGuard) throws(NetExtError) {}
    public func applySteering(_ steering: FlowSteering) throws(NetExtError) {}
    public func applyDNSGuard(_ dnsGuard: DNSGuard) throws(NetExtError) {}
}

/// Runs `ip` (iproute2) for each step.
public struct IPCommandApplier: NetworkApplier {
    public let executable: String
    /// The app proxies' marks whose policy rules this applier installed (nil: not known yet, the
    /// first call reads them), so a steering change with no proxy before or after costs no `ip`.
    private let proxyMarksInForce = ProxyMarks()

    private final class ProxyMarks: Sendable {
        let marks = Mutex<Set<UInt32>?>(nil)
    }

    public init(executable: String = CommandRunner.ipPath) {
        self.executable = executable
    }

    public func apply(_ plan: NetworkPlan) throws(NetExtError) {
        try run(plan.applyCommands) { teardown(plan) }
    }

    public func apply(_ plan: NetworkPlan, replacing previous: NetworkPlan) throws(NetExtError) {
        // Undoing a partial change is the change back: what already matches `previous` makes
        // `ip` answer "exists" or "not found", which is ignored.
        try run(plan.changeCommands(from: previous)) {
            for command in previous.changeCommands(from: plan) { _ = run(command) }
        }
    }

    /// Runs `commands` in order; at the first that fails, runs `undo` and throws naming it.
    private func run(_ commands: [[String]], undo: () -> Void) throws(NetExtError) {
        for (done, command) in commands.enumerated() {
            let result = run(command)
            guard result.status == 0 else {
                undo()
                throw NetExtError(.connectionFailed, "ip \(command.joined(separator: " ")) failed: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) (after \(done) steps; undone)")
            }
        }
    }

    public func teardown(_ plan: NetworkPlan) {
        for command in plan.teardownCommands { _ = run(command) }
    }

    public func removeStale(tables: ClosedRange<Int>, priorities: ClosedRange<Int>) {
        for family in ["-4", "-6"] {
            let listing = run([family, "rule", "show"]).output
            for line in listing.split(separator: "\n") {
                guard let priority = Int(line.prefix { $0 != ":" }), priorities.contains(priority) else { continue }
                _ = run([family, "rule", "del", "priority", "\(priority)"])
            }
            for table in tables { _ = run([family, "route", "flush", "table", "\(table)"]) }
        }
    }

    public func underlyingMTU(toward address: String) -> Int? {
        guard IPPrefix.parseAddress(address) != nil else { return nil }
        let words = run(["route", "get", address]).output.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard let index = words.firstIndex(of: "dev"), index + 1 < words.count else { return nil }
        return TunDevice.mtu(of: words[index + 1])
    }

    public func localNetworks() -> [IPPrefix] {
        var networks: [IPPrefix] = []
        for family in ["-4", "-6"] {
            // "198.51.100.0/24 dev eth0 proto kernel scope link src 198.51.100.2"
            for line in run([family, "-o", "route", "show", "table", "main", "proto", "kernel"]).output.split(separator: "\n") {
                let words = line.split(separator: " ").map(String.init)
                guard let first = words.first, let device = words.firstIndex(of: "dev").map({ words.indices.contains($0 + 1) ? words[$0 + 1] : "" }),
                      !device.hasPrefix("netext"), device != "lo", let prefix = try? IPPrefix(first.contains("/") ? first : first + (family == "-4" ? "/32" : "/128")) else { continue }
                if !networks.contains(prefix) { networks.append(prefix) }
            }
        }
        return networks
    }

    public func applyGuard(_ trafficGuard: TrafficGuard) throws(NetExtError) {
        try installTable(TrafficGuard.tableName, ruleset: trafficGuard.isActive ? trafficGuard.ruleset : nil, purpose: "the kill switch and enforced routes", what: "the traffic guard")
    }

    public func applyDNSGuard(_ dnsGuard: DNSGuard) throws(NetExtError) {
        try installTable(DNSGuard.tableName, ruleset: dnsGuard.isActive ? dnsGuard.ruleset : nil, purpose: "prohibiting other DNS", what: "the DNS guard")
    }

    public func applySteering(_ steering: FlowSteering) throws(NetExtError) {
        try installTable(FlowSteering.tableName, ruleset: steering.isActive ? steering.ruleset : nil, purpose: "per-app routing", what: "the per-app steering")
        try applyProxyRouting(marks: steering.proxyMarks)
        // Replies to an app's flow come in through the tunnel from addresses the main table
        // routes elsewhere: strict reverse-path filtering would drop them, loose keeps its check.
        for member in steering.members where member.mode == .include && !member.interface.isEmpty {
            try? "2\n".write(toFile: "/proc/sys/net/ipv4/conf/\(member.interface)/rp_filter", atomically: false, encoding: .utf8)
        }
    }

    /// One policy rule per running app proxy's mark to the proxy table, whose route delivers
    /// everything locally (`tproxy` needs the packets to come in); the table is emptied when no
    /// proxy runs. The rules in force are read from `ip rule`, so only differences are changed.
    private func applyProxyRouting(marks: Set<UInt32>) throws(NetExtError) {
        let before = proxyMarksInForce.marks.withLock { $0 }
        if before == marks { return }
        // Unknown until it is in force: a failure leaves the next call to read the rules again.
        proxyMarksInForce.marks.withLock { $0 = nil }
        let priority = "\(FlowSteering.proxyRulePriority)", table = "\(FlowSteering.proxyTable)"
        let mask = FlowSteering.hex(FlowSteering.markMask)
        for family in ["-4", "-6"] {
            // "7099:	from all fwmark 0x810000/0xff0000 lookup 7099"
            var present = Set<UInt32>()
            for line in run([family, "rule", "show", "priority", priority]).output.split(separator: "\n") {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let index = words.firstIndex(of: "fwmark"), index + 1 < words.count,
                      let mark = UInt32(words[index + 1].prefix { $0 != "/" }.dropFirst(2), radix: 16) else { continue }
                present.insert(mark)
            }
            if present.isEmpty && marks.isEmpty { continue }
            if !marks.isEmpty {
                let route = run([family, "route", "replace", "local", "default", "dev", "lo", "table", table])
                guard route.status == 0 else {
                    throw NetExtError(.connectionFailed, "ip \(family) route replace local default dev lo table \(table) failed: \(route.output.trimmingCharacters(in: .whitespacesAndNewlines))")
                }
            }
            for mark in marks.subtracting(present).sorted() {
                let rule = [family, "rule", "add", "priority", priority, "fwmark", "\(FlowSteering.hex(mark))/\(mask)", "lookup", table]
                let result = run(rule)
                guard result.status == 0 else {
                    throw NetExtError(.connectionFailed, "ip \(rule.joined(separator: " ")) failed: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
                }
            }
            for mark in present.subtracting(marks) {
                _ = run([family, "rule", "del", "priority", priority, "fwmark", "\(FlowSteering.hex(mark))/\(mask)", "lookup", table])
            }
            if marks.isEmpty { _ = run([family, "route", "flush", "table", table]) }
        }
        proxyMarksInForce.marks.withLock { $0 = marks }
    }

    /// Replaces the `inet` table `name` with `ruleset` in one nft transaction, or (nil) deletes it.
    private func installTable(_ name: String, ruleset: String?, purpose: String, what: String) throws(NetExtError) {
        guard let nft = CommandRunner.nftPath else {
            if ruleset != nil { throw NetExtError(.connectionFailed, "\(purpose) needs nft (apt-get install nftables)") }
            return
        }
        guard let ruleset else {
            _ = CommandRunner.run(nft, ["delete", "table", "inet", name])
            return
        }
        let result = CommandRunner.run(nft, ["-f", "-"], input: ruleset)
        guard result.status == 0 else {
            throw NetExtError(.connectionFailed, "nft refused \(what): \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    private func run(_ arguments: [String]) -> (status: Int32, output: String) {
        CommandRunner.run(executable, arguments)
    }
}
