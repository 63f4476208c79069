import NetExtCore

/// The checks a client's IP packet passes before the relay sends it (RFC 9484 §7: a proxy
/// does not forward packets whose source is not an address it assigned, nor ones outside the
/// tunnel's scope). Pure: the router calls it for every packet.
public enum ConnectIPPacketCheck {
    /// Why a packet was not sent.
    public enum Drop: Sendable, Hashable, CustomStringConvertible {
        /// Not an IPv4/IPv6 packet, or its header's length is not the datagram's.
        case malformed
        /// Its source is not an address the relay assigned to this stream.
        case spoofedSource
        /// Its destination or protocol is outside the relay's allowed destinations or the scope.
        case outOfScope
        /// The network did not take it (the TUN interface's queue was full).
        case networkRefused

        public var description: String {
            switch self {
            case .malformed: "not a whole IPv4 or IPv6 packet"
            case .spoofedSource: "its source is not the address the relay assigned"
            case .outOfScope: "its destination or protocol is outside what the relay may reach for this tunnel"
            case .networkRefused: "the network did not take it"
            }
        }
    }

    /// nil when `packet` may be sent for a stream holding `sources` with `reach`.
    public static func verdict(_ packet: UnsafeRawBufferPointer, sources: [IPPrefix], reach: ConnectIPReach) -> Drop? {
        guard let info = IPPacketInfo(packet), info.length == packet.count else { return .malformed }
        guard sources.contains(where: { $0.contains(IPPrefix(address: info.source, length: info.source.count * 8)) }) else { return .spoofedSource }
        guard reach.admits(destination: info.destination, ipProtocol: info.ipProtocol) else { return .outOfScope }
        return nil
    }
}
