/// The packet-filter rules that hold DNS answers while a transparent proxy has host rules
/// (``NetworkRule/destinationHost``): every UDP answer arriving (source port 53) goes to a
/// netfilter queue netextd reads, and is let go once the addresses it gives for a name a host
/// rule covers are in the rule's sets — so the app's first connection to them is already
/// steered. Answers for other names are let go at once.
///
/// This kernel's nftables has no native `queue` statement (PLATFORM.md), so the rule is an
/// iptables-nft `NFQUEUE` rule in a chain of netextd's own in the `mangle` table's INPUT chain:
/// that base chain runs before the `filter` table's (the content filter's), and a verdict of
/// *accept* there ends only that chain, so every later rule still sees the answer.
/// `--queue-bypass` lets answers pass while nothing reads the queue (netextd gone): the proxy is
/// not running then either.
public enum ProxyDNSHoldRules {
    public static let chain = "NETEXTD-PXY-DNS"
    /// Below the content filter's queue (7100).
    public static let queueNumber: UInt16 = 7098

    /// The `iptables-restore --noflush` input (the same for ip6tables): the chain created (or
    /// emptied) and filled, and jumped to first from INPUT.
    public static func restoreInput() -> String {
        [
            "*mangle",
            ":\(chain) - [0:0]",
            "-A \(chain) -p udp --sport 53 -j NFQUEUE --queue-num \(queueNumber) --queue-bypass",
            "-I INPUT 1 -j \(chain)",
            "COMMIT",
        ].joined(separator: "\n") + "\n"
    }

    /// The iptables arguments that remove the chain and its jump (each harmless when absent).
    public static let removalCommands: [[String]] = [
        ["-t", "mangle", "-D", "INPUT", "-j", chain],
        ["-t", "mangle", "-F", chain],
        ["-t", "mangle", "-X", chain],
    ]
}
