/// Which way a flow goes, as Apple's `NETrafficDirection`: opened by a program of this machine
/// (outbound), by another machine toward one of this machine's services (inbound), or either.
public enum TrafficDirection: String, Sendable, Hashable, Codable, CaseIterable {
    case any
    case inbound
    case outbound
}

/// Which flows a network rule names, as Apple's `NENetworkRule`: outbound flows toward a
/// destination network (an address prefix) or a destination host (a DNS name or domain) and a
/// port, of a protocol; or, by remote and local network and direction, inbound flows too.
public struct NetworkRule: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum TransportProtocol: String, Sendable, Hashable, Codable, CaseIterable {
        case any
        case tcp
        case udp
    }

    /// The remote network — for an outbound flow its destination — (`0.0.0.0/0` or `::/0`:
    /// every address of that family); nil in a host rule, or any remote address in a rule made
    /// with ``init(remoteNetwork:remotePort:localNetwork:localPort:protocol:direction:)``.
    public var destinationNetwork: IPPrefix?
    /// A host rule's name, lowercased, without a final dot: one label names that host only, two
    /// or more the domain (the name itself and every name below it), as Apple's
    /// `init(destinationHost:protocol:)`. Flows are matched by the addresses DNS answered for
    /// such names (see docs/app-proxy.md, "Host rules").
    public var destinationHost: String?
    /// The remote port (an outbound flow's destination port); nil: any port.
    public var destinationPort: UInt16?
    /// This machine's end: its address network and port (nil: any).
    public var localNetwork: IPPrefix?
    public var localPort: UInt16?
    public var transportProtocol: TransportProtocol
    /// Outbound (the default), inbound, or both.
    public var direction: TrafficDirection

    /// `NENetworkRule(destinationNetwork:prefix:protocol:)`.
    public init(destinationNetwork: IPPrefix, destinationPort: UInt16? = nil, protocol transportProtocol: TransportProtocol = .any) {
        self.destinationNetwork = destinationNetwork
        self.destinationPort = destinationPort == 0 ? nil : destinationPort
        self.transportProtocol = transportProtocol
        direction = .outbound
    }

    /// `NENetworkRule(destinationHost:protocol:)`: flows toward `destinationHost.hostname` (one
    /// label: that host; more: the domain) on its port (0: any port).
    public init(destinationHost: NetworkEndpoint, protocol transportProtocol: TransportProtocol = .any) {
        var name = destinationHost.hostname.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        self.destinationHost = name
        self.destinationPort = destinationHost.port == 0 ? nil : destinationHost.port
        self.transportProtocol = transportProtocol
        direction = .outbound
    }

    /// `NENetworkRule(remoteNetwork:remotePrefix:localNetwork:localPrefix:protocol:direction:)`:
    /// flows between a remote network and port and this machine's local network and port (nil or
    /// port 0: any), opened in `direction`. An inbound flow is a connection another machine opens
    /// to a service here (TCP only: see docs/app-proxy.md, "Inbound rules").
    public init(
        remoteNetwork: IPPrefix?, remotePort: UInt16? = nil, localNetwork: IPPrefix? = nil, localPort: UInt16? = nil,
        protocol transportProtocol: TransportProtocol = .any, direction: TrafficDirection
    ) {
        destinationNetwork = remoteNetwork
        destinationPort = remotePort == 0 ? nil : remotePort
        self.localNetwork = localNetwork
        self.localPort = localPort == 0 ? nil : localPort
        self.transportProtocol = transportProtocol
        self.direction = direction
    }

    private enum CodingKeys: String, CodingKey {
        case destinationNetwork, destinationHost, destinationPort, localNetwork, localPort, transportProtocol, direction
    }

    /// Reads rules written before local networks and directions existed (outbound ones).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        destinationNetwork = try container.decodeIfPresent(IPPrefix.self, forKey: .destinationNetwork)
        destinationHost = try container.decodeIfPresent(String.self, forKey: .destinationHost)
        destinationPort = try container.decodeIfPresent(UInt16.self, forKey: .destinationPort)
        localNetwork = try container.decodeIfPresent(IPPrefix.self, forKey: .localNetwork)
        localPort = try container.decodeIfPresent(UInt16.self, forKey: .localPort)
        transportProtocol = try container.decode(TransportProtocol.self, forKey: .transportProtocol)
        direction = try container.decodeIfPresent(TrafficDirection.self, forKey: .direction) ?? .outbound
    }

    /// Whether the rule names a host (or domain) rather than a network.
    public var isHostRule: Bool { destinationHost != nil }
    /// Whether it takes flows other machines open to this one.
    public var takesInbound: Bool { direction != .outbound }
    /// Whether it takes flows this machine's programs open.
    public var takesOutbound: Bool { direction != .inbound }

    /// Whether a host rule covers `name` (as the app looked it up): the same name, or for a
    /// rule of two or more labels a name below it. A network rule covers no name.
    public func covers(host name: String) -> Bool {
        guard let destinationHost else { return false }
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == destinationHost { return true }
        return destinationHost.contains(".") && name.hasSuffix("." + destinationHost)
    }

    /// `192.0.2.0/24 port 443 tcp`, `host www.site.test port 443 tcp`,
    /// `inbound from 203.0.113.0/24 to port 22 tcp`.
    public var description: String {
        var text = direction == .outbound ? "" : "\(direction.rawValue) from "
        text += destinationHost.map { "host \($0)" } ?? destinationNetwork.map { "\($0)" } ?? "anywhere"
        text += destinationPort.map { " port \($0)" } ?? ""
        if localNetwork != nil || localPort != nil {
            text += " to" + (localNetwork.map { " \($0)" } ?? "") + (localPort.map { " port \($0)" } ?? "")
        }
        return text + " " + transportProtocol.rawValue
    }

    /// Refuses a rule naming nothing, both a network and a host, a host that is not a DNS name
    /// (an address belongs in a network rule), networks of two families, or an inbound rule that
    /// is not TCP or names a host; the message names `field`.
    func validate(as field: String) throws(NetExtError) {
        if let host = destinationHost {
            if destinationNetwork != nil { throw .invalid("\(field): names both a destination network and a destination host; a rule has one") }
            guard Self.isHostName(host) else {
                throw .invalid("\(field): destinationHost \"\(host)\" is not a DNS name as rules write them (lowercase letters, digits, hyphens and dots, labels of 1 to 63, at most 253 in all; an address belongs in a destinationNetwork rule)")
            }
            if direction != .outbound { throw .invalid("\(field): a host rule takes outbound flows only (the name is what a program here looked up)") }
        }
        if destinationHost == nil && destinationNetwork == nil && localNetwork == nil && destinationPort == nil && localPort == nil && direction == .outbound {
            throw .invalid("\(field): names neither a destination network nor a destination host")
        }
        if let remote = destinationNetwork, let local = localNetwork, remote.isIPv6 != local.isIPv6 {
            throw .invalid("\(field): the remote network \(remote) and the local network \(local) are of different address families")
        }
        if takesInbound && transportProtocol != .tcp {
            throw .invalid("\(field): \(direction.rawValue) rules take TCP flows only (protocol tcp); netextd hands over no inbound UDP")
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
