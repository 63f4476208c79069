/// Which flows a network rule names, as Apple's `NENetworkRule`: outbound flows toward a
/// destination network (an address prefix) and port, of a protocol.
public struct NetworkRule: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum TransportProtocol: String, Sendable, Hashable, Codable, CaseIterable {
        case any
        case tcp
        case udp
    }

    /// The destination network (`0.0.0.0/0` or `::/0`: every destination of that family).
    public var destinationNetwork: IPPrefix
    /// The destination port; nil: any port.
    public var destinationPort: UInt16?
    public var transportProtocol: TransportProtocol

    /// `NENetworkRule(destinationNetwork:prefix:protocol:)`.
    public init(destinationNetwork: IPPrefix, destinationPort: UInt16? = nil, protocol transportProtocol: TransportProtocol = .any) {
        self.destinationNetwork = destinationNetwork
        self.destinationPort = destinationPort == 0 ? nil : destinationPort
        self.transportProtocol = transportProtocol
    }

    /// `192.0.2.0/24 port 443 tcp`.
    public var description: String {
        "\(destinationNetwork)\(destinationPort.map { " port \($0)" } ?? "") \(transportProtocol.rawValue)"
    }

    /// The nft match of its packets: TCP, UDP or both, toward the network and port.
    func nftMatch() -> String {
        let family = destinationNetwork.isIPv6 ? "ip6" : "ip"
        let network = destinationNetwork.length == 0 ? "meta nfproto \(destinationNetwork.isIPv6 ? "ipv6" : "ipv4")" : "\(family) daddr \(destinationNetwork)"
        let transports = switch transportProtocol {
        case .tcp: "meta l4proto tcp"
        case .udp: "meta l4proto udp"
        case .any: "meta l4proto { tcp, udp }"
        }
        return "\(network) \(transports)" + (destinationPort.map { " th dport \($0)" } ?? "")
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

    /// The most rules of each kind.
    public static let maximumRules = 1_024

    /// Refuses settings that would take nothing, or too much to write as rules; the message
    /// names the field.
    public func validate() throws(NetExtError) {
        guard !includedNetworkRules.isEmpty else {
            throw .invalid("includedNetworkRules: a transparent proxy needs at least one rule naming the flows it takes")
        }
        for (name, rules) in [("includedNetworkRules", includedNetworkRules), ("excludedNetworkRules", excludedNetworkRules)] where rules.count > Self.maximumRules {
            throw .invalid("\(name): \(rules.count) rules; at most \(Self.maximumRules) are accepted")
        }
    }
}
