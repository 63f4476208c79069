/// The transport protocols a flow can have (IANA protocol numbers).
public enum FlowProtocol: String, Sendable, Hashable, Codable {
    case tcp, udp, icmp, icmpv6, other

    public init(number: UInt8) {
        switch number {
        case 6: self = .tcp
        case 17: self = .udp
        case 1: self = .icmp
        case 58: self = .icmpv6
        default: self = .other
        }
    }
}
