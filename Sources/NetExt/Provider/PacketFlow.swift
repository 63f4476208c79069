#if canImport(Glibc)
import Glibc
#endif

/// The tunnel's packets (Apple's `NEPacketTunnelFlow`): what the system routes into the tunnel
/// is read here, and what the provider writes is delivered to the system.
///
/// `ProviderContext.packetFlow` is a `TunPacketFlow` over the TUN device netextd created; tests
/// use `MemoryPacketFlow` from NetExtTesting, whose other end plays the system.
public protocol PacketFlow: AnyObject, Sendable {
    /// The interface the packets travel through (e.g. `netext0`).
    var interface: String { get }
    /// The interface's MTU.
    var mtu: Int { get }
    /// Waits for packets and returns the ones available now (at most `limit`); throws once the
    /// flow is closed.
    func readPackets(limit: Int) async throws -> [TunnelPacket]
    /// Delivers packets to the system; empty packets and packets over the MTU are dropped.
    func writePackets(_ packets: [TunnelPacket]) throws
    /// Ends the flow.
    func close()
}

extension PacketFlow {
    /// The largest packet the flow carries (the interface's MTU, at least IPv6's 1280).
    public var maximumPacket: Int { max(mtu > 0 ? mtu : 1500, 1280) }

    /// Waits for packets and returns at most 64 of those available now.
    public func readPackets() async throws -> [TunnelPacket] { try await readPackets(limit: 64) }
}

/// One IP packet with its protocol family (Apple's `NEPacket`).
public struct TunnelPacket: Sendable, Hashable {
    /// The whole IP packet, from its first header byte.
    public var data: [UInt8]
    /// `AF_INET` or `AF_INET6`; from the version nibble unless given.
    public var protocolFamily: Int32
    /// A packet; the protocol family is read from `data`'s version nibble unless given.
    public init(data: [UInt8], protocolFamily: Int32? = nil) {
        self.data = data
        self.protocolFamily = protocolFamily ?? ((data.first ?? 0) >> 4 == 6 ? AF_INET6 : AF_INET)
    }
}
