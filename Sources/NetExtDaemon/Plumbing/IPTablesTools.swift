import Foundation

/// Where iptables' tools are on this machine, preferring the nft back end: the content filter's
/// queue rules and the proxies' DNS hold are iptables-nft rules (this kernel's nftables has no
/// native `queue` statement).
enum IPTablesTools {
    private static func tool(_ names: [String]) -> String? {
        for directory in ["/usr/sbin", "/sbin", "/usr/bin"] {
            for name in names where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") { return "\(directory)/\(name)" }
        }
        return nil
    }

    /// (restore, plain) for iptables, then for ip6tables.
    static let families: [(restore: String?, plain: String?)] = [
        (tool(["iptables-nft-restore", "iptables-restore"]), tool(["iptables-nft", "iptables"])),
        (tool(["ip6tables-nft-restore", "ip6tables-restore"]), tool(["ip6tables-nft", "ip6tables"])),
    ]
}
