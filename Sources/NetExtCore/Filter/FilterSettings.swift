/// What a data provider tells netextd to decide in the kernel, without asking it (Apple's
/// `NEFilterSettings` with `NEFilterRule`s): flows matching a rule are allowed, dropped, or
/// handed to the provider (`filterData`); the first matching rule wins; flows no rule matches
/// get `defaultAction` (`filterData` — every flow to the provider, as without settings — or
/// `allow`). Rules are checked at a flow's first packet, so a flow decided here costs nothing
/// more than a conntrack mark.
public struct FilterSettings: Sendable, Hashable, Codable {
    public enum Action: String, Sendable, Hashable, Codable {
        case allow
        case drop
        case filterData
    }

    /// Apple's `NENetworkRule`: which flows a rule covers; nil fields match anything.
    public struct Rule: Sendable, Hashable, Codable {
        public var remotePrefix: IPPrefix?
        /// The remote port (TCP and UDP only).
        public var remotePort: UInt16?
        /// The local port (TCP and UDP only): a service on this machine, for inbound rules.
        public var localPort: UInt16?
        public var transport: FlowProtocol?
        public var direction: FilterFlow.Direction?
        public var action: Action

        public init(
            remotePrefix: IPPrefix? = nil, remotePort: UInt16? = nil, localPort: UInt16? = nil, transport: FlowProtocol? = nil,
            direction: FilterFlow.Direction? = nil, action: Action
        ) {
            self.remotePrefix = remotePrefix
            self.remotePort = remotePort
            self.localPort = localPort
            self.transport = transport
            self.direction = direction
            self.action = action
        }
    }

    public var rules: [Rule]
    public var defaultAction: Action
    /// The most rules accepted (each becomes two kernel rules).
    public static let maximumRules = 10_000

    public init(rules: [Rule], defaultAction: Action = .filterData) {
        self.rules = rules
        self.defaultAction = defaultAction
    }

    /// Refuses what the kernel rules cannot express, naming the rule at fault.
    public func validate() throws(NetExtError) {
        guard defaultAction != .drop else { throw .invalid("filter settings: the default action must be allow or filterData (as Apple's)") }
        guard rules.count <= Self.maximumRules else { throw .invalid("filter settings: \(rules.count) rules; at most \(Self.maximumRules)") }
        for (index, rule) in rules.enumerated() where rule.remotePort != nil || rule.localPort != nil {
            guard rule.transport == .tcp || rule.transport == .udp else {
                throw .invalid("filter settings: rule \(index) names a port but its transport is not tcp or udp")
            }
        }
        for (index, rule) in rules.enumerated() {
            if rule.transport == .icmp, rule.remotePrefix?.isIPv6 == true { throw .invalid("filter settings: rule \(index): icmp with an IPv6 prefix (use icmpv6)") }
            if rule.transport == .icmpv6, rule.remotePrefix?.isIPv6 == false { throw .invalid("filter settings: rule \(index): icmpv6 with an IPv4 prefix (use icmp)") }
            if rule.transport == .other { throw .invalid("filter settings: rule \(index): transport 'other' cannot be matched; leave it out for any") }
        }
    }
}
