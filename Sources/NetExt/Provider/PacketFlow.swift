import Foundation
import NetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The tunnel's packets (Apple's `NEPacketTunnelFlow`): what the system routes into the tunnel is
/// read here, and what the provider writes is delivered to the system. Backed by the TUN
/// descriptor netextd passed to the provider.
///
/// Two ways to use it: `readPackets()`/`writePackets(_:)` (async, one batch per call), or the
/// blocking `read(into:)`/`write(_:)` for a data-plane thread that reuses its buffers.
public final class PacketFlow: Sendable {
    /// One IP packet with its protocol family (`AF_INET` or `AF_INET6`), from the version nibble.
    public struct Packet: Sendable, Hashable {
        public var data: [UInt8]
        public var protocolFamily: Int32
        public init(data: [UInt8], protocolFamily: Int32? = nil) {
            self.data = data
            self.protocolFamily = protocolFamily ?? ((data.first ?? 0) >> 4 == 6 ? AF_INET6 : AF_INET)
        }
    }

    public let fileDescriptor: Int32
    public let interface: String
    public let mtu: Int
    private let closed = Mutex(false)

    init(fileDescriptor: Int32, interface: String, mtu: Int) {
        self.fileDescriptor = fileDescriptor
        self.interface = interface
        self.mtu = mtu
    }

    /// Blocks until a packet arrives and copies it into `buffer`; returns its length (0 once the
    /// flow is closed).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try PacketIO.read(fileDescriptor, into: buffer)
    }

    /// Delivers one packet to the system.
    public func write(_ packet: UnsafeRawBufferPointer) throws {
        try PacketIO.write(fileDescriptor, packet)
    }

    /// Waits for packets and returns the ones available now (at most `limit`), on a thread of
    /// its own so the caller's executor never blocks.
    public func readPackets(limit: Int = 64) async throws -> [Packet] {
        let fd = fileDescriptor
        let size = mtu + 64
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var packets: [Packet] = []
                var buffer = [UInt8](repeating: 0, count: size)
                do {
                    repeat {
                        let count = try buffer.withUnsafeMutableBytes { try PacketIO.read(fd, into: $0) }
                        if count <= 0 { break }
                        packets.append(Packet(data: Array(buffer[..<count])))
                        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                        if poll(&poller, 1, 0) <= 0 { break }
                    } while packets.count < limit
                    continuation.resume(returning: packets)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Delivers packets to the system.
    public func writePackets(_ packets: [Packet]) throws {
        for packet in packets {
            try packet.data.withUnsafeBytes { try write($0) }
        }
    }

    /// Closes the descriptor (the interface goes away when netextd closes its copy too).
    public func close() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { _ = Glibc.close(fileDescriptor) }
    }
}
