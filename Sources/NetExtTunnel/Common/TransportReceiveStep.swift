import Foundation
import NetExtCore
import NetExtLinux
import TunnelProtocol

/// The sessions one end receives on: the current one and, until it expires, the one a rekey
/// replaced (messages sent before the switch still arrive under its index).
protocol ReceivingSessions {
    var current: TransportSession? { get set }
    var previous: TransportSession? { get set }
}

/// One transport-data message of a received batch, opened in place in the receive buffer.
struct OpenedTransportMessage {
    /// The receiver index the message named (which session's keys opened it).
    var index: UInt32
    var counter: UInt64
    /// The plaintext: an IP packet and its padding, inside the receive buffer.
    var packet: UnsafeMutableRawBufferPointer
    /// The encrypted message's length, for byte counts.
    var messageLength: Int
    /// Which datagram buffer of the batch it came in (for its source address).
    var buffer: Int
    /// What the caller found: the peer's place in its table (the server's), or 0.
    var peer: Int
    /// Set once its counter passed the replay window.
    var accepted = false
}

/// The receive-and-accept steps the tunnel's client and server share, in the order each
/// batch takes them: open each transport message in place outside any lock (`open`), check the
/// batch's counters against the session's replay window under the caller's lock once
/// (`acceptCounter`), then write the accepted packets to the TUN device (`write`). The wire
/// layout is docs/protocol.md's transport message: type, receiver index, counter, ciphertext.
enum TransportReceiveStep {
    /// Opens a transport-data datagram in place with `cipher(index)`; nil if it is too short, its
    /// index has no key, or it does not authenticate.
    @inline(__always)
    static func open(
        _ datagram: UnsafeMutableRawBufferPointer, buffer: Int, cipher: (UInt32) -> (cipher: TransportCipher, peer: Int)?
    ) -> OpenedTransportMessage? {
        guard datagram.count >= WireSize.transportMinimum else { return nil }
        let index = UInt32(bigEndian: datagram.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let counter = UInt64(bigEndian: datagram.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard let key = cipher(index), let plaintext = key.cipher.open(datagram, counter: counter) else { return nil }
        let packet = UnsafeMutableRawBufferPointer(rebasing: datagram[WireSize.transportHeader..<(WireSize.transportHeader + plaintext)])
        return OpenedTransportMessage(index: index, counter: counter, packet: packet, messageLength: datagram.count, buffer: buffer, peer: key.peer)
    }

    /// Records the message's counter in whichever of the peer's two sessions (the current one
    /// and the one it replaced) its index names; false if neither does or the counter was seen.
    @inline(__always)
    static func acceptCounter(of message: OpenedTransportMessage, in peer: inout some ReceivingSessions, now: Date) -> Bool {
        if peer.current?.localIndex == message.index { return peer.current!.acceptCounter(message.counter, now: now) }
        if peer.previous?.localIndex == message.index { return peer.previous!.acceptCounter(message.counter, now: now) }
        return false
    }

    /// Adds the accepted messages' IP packets (cut to their IP length, padding off) to `writer`
    /// and flushes it. `admit` may refuse a packet (anti-spoofing). Returns how many were not IP
    /// and how many `admit` refused.
    static func write(
        _ messages: [OpenedTransportMessage], to writer: TunPacketWriter, admit: (UnsafeRawBufferPointer, OpenedTransportMessage) -> Bool = { _, _ in true }
    ) -> (notIP: Int, refused: Int) {
        var notIP = 0
        var refused = 0
        for message in messages where message.accepted && message.packet.count > 0 {
            let packet = UnsafeRawBufferPointer(message.packet)
            guard let length = IPPacketInfo.length(of: packet) else {
                notIP += 1
                continue
            }
            guard admit(packet, message) else {
                refused += 1
                continue
            }
            writer.add(UnsafeMutableRawBufferPointer(rebasing: message.packet[..<length]))
        }
        writer.flush()
        return (notIP, refused)
    }
}
