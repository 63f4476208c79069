/// The packet-filter rules that bring new flows to netextd while a content filter is enabled,
/// and keep decided flows in the kernel.
///
/// This kernel's nftables has no native `queue` statement (see PLATFORM.md), so the rules are
/// iptables-nft rules (`NFQUEUE` through nft_compat) in two chains of netextd's own, jumped to
/// first from the `filter` table's OUTPUT and INPUT chains:
/// 1. a flow whose conntrack mark says *allowed* returns at once (the bulk of the traffic);
/// 2. loopback traffic is not filtered, and resets of a dropped flow may leave;
/// 3. packets without a conntrack entry (IPv6 neighbour discovery, invalid packets) pass: they
///    could not keep a verdict;
/// 4. a packet netextd re-injected with a verdict mark (`NF_REPEAT`) copies it to the flow's
///    conntrack mark and passes, or is reset (TCP) / dropped;
/// 5. a flow marked *dropped* is reset (TCP) or dropped; one marked *dropped quietly* (netextd
///    answered it with the block page) is dropped without a reset;
/// 6. TCP segments without payload (and without FIN or RST) of undecided flows pass (handshakes
///    carry nothing to judge);
/// 7. everything else goes to the queue, packets of the answering side marked as such (with `--queue-bypass` when the filter fails open, so
///    packets pass while netextd has no reader bound).
public struct FilterSteering: Sendable, Hashable {
    public static let outputChain = "NETEXTD-FLT-OUT"
    public static let inputChain = "NETEXTD-FLT-IN"
    /// The provider's `FilterSettings` rules, called at a flow's first packet.
    public static let settingsOutputChain = "NETEXTD-FLT-SET-OUT"
    public static let settingsInputChain = "NETEXTD-FLT-SET-IN"
    /// Conntrack/packet mark bits netextd owns for verdicts.
    public static let verdictMask: UInt32 = 0x6000_0000
    public static let allowMark: UInt32 = 0x2000_0000
    public static let dropMark: UInt32 = 0x4000_0000
    /// Dropped without a reset: netextd answered the flow itself (the block page).
    public static let quietDropMark: UInt32 = 0x6000_0000
    /// Set on queued packets that come from the side that answered the connection (conntrack's
    /// reply direction), so netextd knows who opened a flow it first sees mid-way.
    public static let replyMark: UInt32 = 0x0800_0000

    /// A classic BPF program (`xt_bpf`, run on the IPv4 header) that matches TCP segments with
    /// no payload: total length − 4·IHL − 4·data offset = 0. Handshakes and bare acknowledgements
    /// of undecided flows pass without a trip to netextd; any byte of data is still queued.
    static let emptyTCPv4 = [
        "40 0 0 2", "2 0 0 0", "177 0 0 0", "96 0 0 0", "28 0 0 0", "2 0 0 0", "80 0 0 12",
        "116 0 0 4", "100 0 0 2", "7 0 0 0", "96 0 0 0", "28 0 0 0", "21 0 1 0", "6 0 0 1", "6 0 0 0",
    ]
    /// The same for IPv6 when TCP follows the fixed header directly (next header 6): payload
    /// length − 4·data offset = 0. With extension headers it does not match (the packet is queued).
    static let emptyTCPv6 = [
        "48 0 0 6", "21 0 10 6", "40 0 0 4", "2 0 0 0", "48 0 0 52", "116 0 0 4", "100 0 0 2",
        "7 0 0 0", "96 0 0 0", "28 0 0 0", "21 0 1 0", "6 0 0 1", "6 0 0 0",
    ]

    static func bytecode(_ program: [String]) -> String {
        "\"\(program.count),\(program.joined(separator: ","))\""
    }
    public var queueNumber: UInt16
    public var failOpen: Bool
    /// Users whose own connections are not filtered (the control provider's), marked allowed
    /// at their first packet.
    public var exemptUIDs: [UInt32]
    /// The netfilter log group that gets a copy of every DNS answer (UDP from port 53) arriving,
    /// decided flow or not, so netextd learns which name each address was looked up as.
    public var dnsLogGroup: UInt16?
    /// The data provider's kernel rules, if it applied any.
    public var settings: FilterSettings?

    public init(queueNumber: UInt16, failOpen: Bool, exemptUIDs: [UInt32] = [], dnsLogGroup: UInt16? = nil, settings: FilterSettings? = nil) {
        self.queueNumber = queueNumber
        self.failOpen = failOpen
        self.exemptUIDs = exemptUIDs
        self.dnsLogGroup = dnsLogGroup
        self.settings = settings
    }

    /// The settings chains' rules for one family and direction: each rule sets the flow's
    /// conntrack mark (allow, drop) or returns to the queue path (filterData); the default
    /// allow marks what no rule matched.
    func settingsLines(_ settings: FilterSettings, chain: String, outbound: Bool, ipv6: Bool, allow: String, drop: String) -> [String] {
        var lines: [String] = []
        for rule in settings.rules {
            if let direction = rule.direction, (direction == .outbound) != outbound { continue }
            if let prefix = rule.remotePrefix, prefix.isIPv6 != ipv6 { continue }
            if rule.transport == .icmp && ipv6 || rule.transport == .icmpv6 && !ipv6 { continue }
            var match = "-A \(chain)"
            if let transport = rule.transport {
                match += " -p " + (transport == .icmpv6 ? "ipv6-icmp" : transport.rawValue)
            }
            if let prefix = rule.remotePrefix { match += (outbound ? " -d " : " -s ") + prefix.description }
            if let port = rule.remotePort { match += (outbound ? " --dport " : " --sport ") + String(port) }
            if let port = rule.localPort { match += (outbound ? " --sport " : " --dport ") + String(port) }
            switch rule.action {
            case .allow: lines += ["\(match) -j CONNMARK --set-xmark \(allow)", "\(match) -j RETURN"]
            case .drop: lines += ["\(match) -j CONNMARK --set-xmark \(drop)", "\(match) -j RETURN"]
            case .filterData: lines.append("\(match) -j RETURN")
            }
        }
        if settings.defaultAction == .allow { lines.append("-A \(chain) -j CONNMARK --set-xmark \(allow)") }
        return lines
    }

    public static func mark(for verdict: FilterVerdict) -> UInt32 {
        verdict == .allow ? allowMark : dropMark
    }

    /// Whether a returned packet mark means the packet may pass.
    public static func isAllowed(mark: UInt32) -> Bool { mark & verdictMask == allowMark }

    private static func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16) }

    /// The `iptables-restore --noflush` input for iptables (or, with `ipv6`, ip6tables): both
    /// chains created (or emptied) and filled, and jumped to first.
    /// Without `jumps`, only the chains are (re)written: for changing installed rules in place.
    public func restoreInput(ipv6: Bool = false, jumps: Bool = true) -> String {
        let mask = Self.hex(Self.verdictMask)
        let allow = "\(Self.hex(Self.allowMark))/\(mask)"
        let drop = "\(Self.hex(Self.dropMark))/\(mask)"
        var lines = ["*filter", ":\(Self.outputChain) - [0:0]", ":\(Self.inputChain) - [0:0]"]
        if let settings {
            lines += [":\(Self.settingsOutputChain) - [0:0]", ":\(Self.settingsInputChain) - [0:0]"]
            lines += settingsLines(settings, chain: Self.settingsOutputChain, outbound: true, ipv6: ipv6, allow: allow, drop: drop)
            lines += settingsLines(settings, chain: Self.settingsInputChain, outbound: false, ipv6: ipv6, allow: allow, drop: drop)
        }
        let quiet = "\(Self.hex(Self.quietDropMark))/\(mask)"
        for (chain, loopback) in [(Self.outputChain, "-o lo"), (Self.inputChain, "-i lo")] {
            let queue = "-j NFQUEUE --queue-num \(queueNumber)" + (failOpen ? " --queue-bypass" : "")
            if chain == Self.inputChain, let dnsLogGroup {
                // First, before decided flows return: answers belong to flows long decided.
                lines.append("-A \(chain) -p udp --sport 53 -j NFLOG --nflog-group \(dnsLogGroup)")
            }
            lines += [
                "-A \(chain) -m connmark --mark \(allow) -j RETURN",
                // Loopback is not filtered (this also lets the kernel's own resets of rejected
                // local connections, and netextd's block pages, through).
                "-A \(chain) \(loopback) -j RETURN",
                // Resets of a blocked flow may leave (the kernel's answer to an inbound one,
                // netextd's reset to the server of a block-paged request).
                "-A \(chain) -p tcp --tcp-flags RST RST -m connmark ! --mark 0x0/\(mask) -j RETURN",
                // Packets without a flow (neighbour discovery, invalid ones) cannot keep a
                // verdict; they pass unjudged rather than loop through the queue.
                "-A \(chain) -m conntrack --ctstate UNTRACKED,INVALID -j RETURN",
                "-A \(chain) -m mark --mark \(allow) -j CONNMARK --set-xmark \(allow)",
                "-A \(chain) -m mark --mark \(drop) -j CONNMARK --set-xmark \(drop)",
                "-A \(chain) -m mark --mark \(quiet) -j CONNMARK --set-xmark \(quiet)",
                "-A \(chain) -m mark --mark \(allow) -j RETURN",
                "-A \(chain) -m mark --mark \(quiet) -j DROP",
                "-A \(chain) -p tcp -m mark --mark \(drop) -j REJECT --reject-with tcp-reset",
                "-A \(chain) -m mark --mark \(drop) -j DROP",
                "-A \(chain) -m connmark --mark \(quiet) -j DROP",
                "-A \(chain) -p tcp -m connmark --mark \(drop) -j REJECT --reject-with tcp-reset",
                "-A \(chain) -m connmark --mark \(drop) -j DROP",
            ]
            if chain == Self.outputChain {
                for uid in exemptUIDs {
                    lines.append("-A \(chain) -m owner --uid-owner \(uid) -j CONNMARK --set-xmark \(allow)")
                    lines.append("-A \(chain) -m owner --uid-owner \(uid) -j RETURN")
                }
            }
            if settings != nil {
                // A flow's first packet (original direction) meets the provider's rules; what
                // they decide returns or is refused here, what they leave goes on to the queue.
                let settingsChain = chain == Self.outputChain ? Self.settingsOutputChain : Self.settingsInputChain
                lines += [
                    "-A \(chain) -m conntrack --ctdir ORIGINAL -j \(settingsChain)",
                    "-A \(chain) -m connmark --mark \(allow) -j RETURN",
                    "-A \(chain) -p tcp -m connmark --mark \(drop) -j REJECT --reject-with tcp-reset",
                    "-A \(chain) -m connmark --mark \(drop) -j DROP",
                ]
            }
            // (FIN and RST segments are queued: they end a flow a provider may be reading.)
            lines.append("-A \(chain) -p tcp --tcp-flags FIN,RST NONE -m bpf --bytecode \(Self.bytecode(ipv6 ? Self.emptyTCPv6 : Self.emptyTCPv4)) -j RETURN")
            lines.append("-A \(chain) -m conntrack --ctdir REPLY -j MARK --set-xmark \(Self.hex(Self.replyMark))/\(Self.hex(Self.replyMark))")
            lines.append("-A \(chain) \(queue)")
        }
        if jumps { lines += ["-I OUTPUT 1 -j \(Self.outputChain)", "-I INPUT 1 -j \(Self.inputChain)"] }
        lines += ["COMMIT", ""]
        return lines.joined(separator: "\n")
    }

    /// The commands (iptables arguments) that remove everything `restoreInput` added; each may
    /// fail harmlessly when there is nothing to remove.
    public static var removalCommands: [[String]] {
        [
            ["-t", "filter", "-D", "OUTPUT", "-j", outputChain],
            ["-t", "filter", "-D", "INPUT", "-j", inputChain],
            ["-t", "filter", "-F", outputChain],
            ["-t", "filter", "-F", inputChain],
            ["-t", "filter", "-X", outputChain],
            ["-t", "filter", "-X", inputChain],
            ["-t", "filter", "-F", settingsOutputChain],
            ["-t", "filter", "-F", settingsInputChain],
            ["-t", "filter", "-X", settingsOutputChain],
            ["-t", "filter", "-X", settingsInputChain],
        ]
    }
}
