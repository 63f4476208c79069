/// Which flows a network rule names, as Apple's `NENetworkRule`: outbound flows toward a
/// destination network (an address prefix) or a destination host (a DNS name or domain) and a
/// port, of a protocol.
public struct NetworkRule: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum TransportProtocol: String, Sendable, Hashable, Codable, CaseIterable {
        case any
        case tcp
        case udp
    }

    /// The destination network (`0.0.0.0/0` or `::/0`: every destination of that family); nil
    /// in a host rule.
    public var destinationNetwork: IPPrefix?
    /// A host rule's name, lowercased, without a final dot: one label names that host only, two
    /// or more the domain (the name itself and every name below it), as Apple's
    /// `init(destinationHost:protocol:)`. Flows are matched by the addresses DNS answered for
    /// such names (see docs/app-proxy.md, "Host rules").
    public var destinationHost: String?
    /// The destination port; nil: any port.
    public var destinationPort: UInt16?
    public var transportProtocol: TransportProtocol

    /// `NENetworkRule(destinationNetwork:prefix:protocol:)`.
    public init(destinationNetwork: IPPrefix, destinationPort: UInt16? = nil, protocol transportProtocol: TransportProtocol = .any) {
        self.destinationNetwork = destinationNetwork
        self.destinationPort = destinationPort == 0 ? nil : destinationPort
        self.transportProtocol = transportProtocol
    }

    /// `NENetworkRule(destinationHost:protocol:)`: flows toward `destinationHost.hostname` (one
    /// label: that host; more: the domain) on its port (0: any port).
    public init(destinationHost: NetworkEndpoint, protocol transportProtocol: TransportProtocol = .any) {
        var name = destinationHost.hostname.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        self.destinationHost = name
        self.destinationPort = destinationHost.port == 0 ? nil : destinationHost.port
        self.transportProtocol = transportProtocol
    }

    /// Whether the rule names a host (or domain) rather than a network.
    public var isHostRule: Bool { destinationHost != nil }

    /// Whether a host rule covers `name` (as the app looked it up): the same name, or for a
    /// rule of two or more labels a name below it. A network rule covers no name.
    public func covers(host name: String) -> Bool {
        guard let destinationHost else { return false }
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == destinationHost { return true }
        return destinationHost.contains(".") && name.hasSuffix("." + destinationHost)
    }

    /// `192.0.2.0/24 port 443 tcp`, `host www.site.test port 443 tcp`.
    public var description: String {
        let destination = destinationHost.map { "host \($0)" } ?? destinationNetwork.map { "\($0)" } ?? "nothing"
        return "\(destination)\(destinationPort.map { " port \($0)" } ?? "") \(transportProtocol.rawValue)"
    }

    /// The nft match of its protocol and port: ` meta l4proto tcp th dport 443`.
    func nftTransportMatch() -> String {
        let transports = switch transportProtocol {
        case .tcp: "meta l4proto tcp"
        case .udp: "meta l4proto udp"
        case .any: "meta l4proto { tcp, udp }"
        }
        return transports + (destinationPort.map { " th dport \($0)" } ?? "")
    }

    /// The nft matches of its packets: TCP, UDP or both, toward the network and port. A host
    /// rule's destinations are the address sets `hostSets` names (IPv4, IPv6): one match each.
    func nftMatches(hostSets: (ipv4: String, ipv6: String)? = nil) -> [String] {
        if isHostRule {
            guard let hostSets else { return [] }
            return ["ip daddr @\(hostSets.ipv4) \(nftTransportMatch())", "ip6 daddr @\(hostSets.ipv6) \(nftTransportMatch())"]
        }
        guard let destinationNetwork else { return [] }
        let family = destinationNetwork.isIPv6 ? "ip6" : "ip"
        let network = destinationNetwork.length == 0 ? "meta nfproto \(destinationNetwork.isIPv6 ? "ipv6" : "ipv4")" : "\(family) daddr \(destinationNetwork)"
        return ["\(network) \(nftTransportMatch())"]
    }

    /// Refuses a rule naming neither or both of a network and a host, or a host that is not a
    /// DNS name (an address belongs in a network rule); the message names `field`.
    func validate(as field: String) throws(NetExtError) {
        switch (destinationNetwork, destinationHost) {
        case (nil, nil): throw .invalid("\(field): names neither a destination network nor a destination host")
        case (.some, .some): throw .invalid("\(field): names both a destination network and a destination host; a rule has one")
        case (nil, .some(let host)):
            guard Self.isHostName(host) else {
                throw .invalid("\(field): destinationHost \"\(host)\" is not a DNS name as rules write them (lowercase letters, digits, hyphens and dots, labels of 1 to 63, at most 253 in all; an address belongs in a destinationNetwork rule)")
            }
        case (.some, nil): break
        }
    }

    /// A DNS name of letters, digits, hyphens (not at a label's ends) and underscores, that is
    /// not an IPv4 address.
    public static func isHostName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for label in labels {
            guard (1...63).contains(label.count), label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else { return false }
            for byte in label {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): continue
                default: return false
                }
            }
        }
        // All-numeric labels make an address, not a name.
        return !labels.allSatisfy { $0.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }
    }
}

/// What a transparent proxy asks for (Apple's `NETransparentProxyNetworkSettings`): the flows of
/// every program toward its included networks go to the provider, except those toward its
/// excluded ones, TCP and UDP.
public struct TransparentProxyNetworkSettings: Sendable, Hashable, Codable {
    public var includedNetworkRules: [NetworkRule]
    public var excludedNetworkRules: [NetworkRule]

    public init(includedNetworkRules: [NetworkRule], excludedNetworkRules: [NetworkRule] = []) {
        self.includedNetworkRules = includedNetworkRules
        self.excludedNetworkRules = excludedNetworkRules
    }

    /// A DNS proxy's: UDP and TCP to port 53, anywhere (the flows of every program but the
    /// provider; the machine's own addresses, such as a local resolver, stay local).
    public static let dnsProxy = TransparentProxyNetworkSettings(includedNetworkRules: [
        NetworkRule(destinationNetwork: IPPrefix(address: [0, 0, 0, 0], length: 0), destinationPort: 53, protocol: .any),
        NetworkRule(destinationNetwork: IPPrefix(address: [UInt8](repeating: 0, count: 16), length: 0), destinationPort: 53, protocol: .any),
    ])

    /// Whether any rule names a host: then DNS answers are held until their addresses are in
    /// the rules' sets.
    public var hasHostRules: Bool { (includedNetworkRules + excludedNetworkRules).contains(where: \.isHostRule) }

    /// The most rules of each kind.
    public static let maximumRules = 1_024

    /// Refuses settings that would take nothing, or too much to write as rules; the message
    /// names the field.
    public func validate() throws(NetExtError) {
        guard !includedNetworkRules.isEmpty else {
            throw .invalid("includedNetworkRules: a transparent proxy needs at least one rule naming the flows it takes")
        }
        for (name, rules) in [("includedNetworkRules", includedNetworkRules), ("excludedNetworkRules", excludedNetworkRules)] {
            guard rules.count <= Self.maximumRules else {
                throw .invalid("\(name): \(rules.count) rules; at most \(Self.maximumRules) are accepted")
            }
            for (index, rule) in rules.enumerated() { try rule.validate(as: "\(name)[\(index)]") }
        }
    }
}
