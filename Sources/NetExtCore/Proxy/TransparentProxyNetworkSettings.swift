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

    /// The nft match of its packets (TCP only: the transparent proxy carries TCP flows).
    func nftMatch() -> String {
        let family = destinationNetwork.isIPv6 ? "ip6" : "ip"
        let network = destinationNetwork.length == 0 ? "meta nfproto \(destinationNetwork.isIPv6 ? "ipv6" : "ipv4")" : "\(family) daddr \(destinationNetwork)"
        return "\(network) meta l4proto tcp" + (destinationPort.map { " tcp dport \($0)" } ?? "")
    }
}

/// What a transparent proxy asks for (Apple's `NETransparentProxyNetworkSettings`): the flows of
/// every program toward its included networks go to the provider, except those toward its
/// excluded ones. NetExt carries TCP flows; a rule for UDP alone names nothing yet.
public struct TransparentProxyNetworkSettings: Sendable, Hashable, Codable {
    public var includedNetworkRules: [NetworkRule]
    public var excludedNetworkRules: [NetworkRule]

    public init(includedNetworkRules: [NetworkRule], excludedNetworkRules: [NetworkRule] = []) {
        self.includedNetworkRules = includedNetworkRules
        self.excludedNetworkRules = excludedNetworkRules
    }

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
        if includedNetworkRules.allSatisfy({ $0.transportProtocol == .udp }) {
            throw .invalid("includedNetworkRules: every rule names UDP only; NetExt's transparent proxy carries TCP flows (UDP is not supported yet)")
        }
    }
}
