import Crypto
import Foundation

/// One direction pair of transport keys from a completed handshake: seals outgoing packets with a
/// 64-bit counter (the nonce) and opens incoming ones through the replay window.
///
/// Transport message: type 4, three zero bytes, the receiver's index (4 bytes), the counter
/// (8 bytes, big-endian), then the ChaCha20-Poly1305 ciphertext of the packet padded with zeros to
/// a multiple of 16 bytes, and the 16-byte tag. The header is not authenticated data; the counter
/// is authenticated as the nonce and the index only selects the key.
public struct TransportSession: Sendable {
    public let localIndex: UInt32
    public let remoteIndex: UInt32
    public let isInitiator: Bool
    public let created: Date
    public let timing: TunnelTiming
    /// Seals this side's packets; usable outside any lock (see `reserveCounters`).
    public let sendCipher: TransportCipher
    /// Opens the peer's packets; usable outside any lock (see `acceptCounter`).
    public let receiveCipher: TransportCipher
    public private(set) var sendCounter: UInt64 = 0
    private var replayWindow = ReplayWindow()
    public private(set) var lastReceived: Date?

    init(localIndex: UInt32, remoteIndex: UInt32, isInitiator: Bool, sendKey: SymmetricKey, receiveKey: SymmetricKey, created: Date, timing: TunnelTiming) {
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
        self.isInitiator = isInitiator
        // Both keys come from HKDF-SHA256 and are always 32 bytes.
        self.sendCipher = TransportCipher(sendKey)!
        self.receiveCipher = TransportCipher(receiveKey)!
        self.created = created
        self.timing = timing
    }

    /// Padding granularity of the encrypted payload.
    public static let paddingMultiple = 16

    /// Whether the session should be replaced by a new handshake (the initiator renews by age,
    /// either side by message count).
    public func needsRekey(now: Date = Date()) -> Bool {
        sendCounter >= timing.rekeyAfterMessages || (isInitiator && now.timeIntervalSince(created) >= timing.rekeyAfterTime)
    }

    /// Whether the session may no longer be used at all.
    public func isExpired(now: Date = Date()) -> Bool {
        now.timeIntervalSince(created) >= timing.rejectAfterTime || sendCounter >= timing.rejectAfterMessages
    }

    /// Takes `count` consecutive send counters for a batch that the caller seals outside its lock
    /// with `sendCipher`; returns the first.
    public mutating func reserveCounters(_ count: Int, now: Date = Date()) throws(TunnelProtocolError) -> UInt64 {
        guard !isExpired(now: now), sendCounter + UInt64(count) <= timing.rejectAfterMessages else { throw .sessionExpired }
        defer { sendCounter += UInt64(count) }
        return sendCounter
    }

    /// Records a counter whose message `receiveCipher` authenticated; false if it is replayed,
    /// too old, or the session may no longer receive.
    public mutating func acceptCounter(_ counter: UInt64, now: Date = Date()) -> Bool {
        guard now.timeIntervalSince(created) < timing.rejectAfterTime, counter < timing.rejectAfterMessages,
              replayWindow.accept(counter) else { return false }
        lastReceived = now
        return true
    }

    /// Encrypts `packet` (empty = keepalive) into a transport message.
    public mutating func seal(_ packet: [UInt8], now: Date = Date()) throws(TunnelProtocolError) -> [UInt8] {
        let counter = try reserveCounters(1, now: now)
        var message = [UInt8](repeating: 0, count: TransportCipher.messageLength(packetLength: packet.count))
        let cipher = sendCipher
        let index = remoteIndex
        message.withUnsafeMutableBytes { buffer in
            packet.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[WireSize.transportHeader...]).copyMemory(from: $0) }
            _ = cipher.seal(packetLength: packet.count, in: buffer, receiverIndex: index, counter: counter)
        }
        return message
    }

    /// Decrypts a transport message addressed to this session; returns the padded plaintext
    /// (empty for a keepalive). Refuses tampered, replayed and too-old messages.
    public mutating func open(_ message: [UInt8], now: Date = Date()) throws(TunnelProtocolError) -> [UInt8] {
        guard message.count >= WireSize.transportMinimum, (message.count - WireSize.transportHeader - WireSize.tag) % Self.paddingMultiple == 0 else {
            throw .badLength(type: MessageType.transportData.rawValue, length: message.count, expected: "\(WireSize.transportMinimum) + a multiple of 16")
        }
        guard message.readBigEndianUInt32(at: 4) == localIndex else { throw .unknownReceiver(message.readBigEndianUInt32(at: 4)) }
        guard now.timeIntervalSince(created) < timing.rejectAfterTime else { throw .sessionExpired }
        let counter = message.readBigEndianUInt64(at: 8)
        guard counter < timing.rejectAfterMessages else { throw .replayedCounter(counter) }
        var buffer = message
        let cipher = receiveCipher
        let length = buffer.withUnsafeMutableBytes { cipher.open($0, counter: counter) }
        guard let length else { throw .decryptionFailed(stage: "transport") }
        guard acceptCounter(counter, now: now) else { throw .replayedCounter(counter) }
        return Array(buffer[WireSize.transportHeader..<(WireSize.transportHeader + length)])
    }
}
