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
    private let sendKey: SymmetricKey
    private let receiveKey: SymmetricKey
    public private(set) var sendCounter: UInt64 = 0
    private var replayWindow = ReplayWindow()
    public private(set) var lastReceived: Date?

    init(localIndex: UInt32, remoteIndex: UInt32, isInitiator: Bool, sendKey: SymmetricKey, receiveKey: SymmetricKey, created: Date, timing: TunnelTiming) {
        self.localIndex = localIndex
        self.remoteIndex = remoteIndex
        self.isInitiator = isInitiator
        self.sendKey = sendKey
        self.receiveKey = receiveKey
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

    /// Encrypts `packet` (empty = keepalive) into a transport message.
    public mutating func seal(_ packet: [UInt8], now: Date = Date()) throws(TunnelProtocolError) -> [UInt8] {
        guard !isExpired(now: now) else { throw .sessionExpired }
        let counter = sendCounter
        sendCounter += 1
        let padded = packet.count % Self.paddingMultiple == 0 ? packet : packet + [UInt8](repeating: 0, count: Self.paddingMultiple - packet.count % Self.paddingMultiple)
        var message: [UInt8] = [MessageType.transportData.rawValue, 0, 0, 0]
        message.reserveCapacity(WireSize.transportHeader + padded.count + WireSize.tag)
        message.appendBigEndian(remoteIndex)
        message.appendBigEndian(counter)
        do {
            let sealed = try ChaChaPoly.seal(padded, using: sendKey, nonce: NoiseNonce.make(counter))
            message.append(contentsOf: sealed.ciphertext)
            message.append(contentsOf: sealed.tag)
        } catch {
            throw .decryptionFailed(stage: "seal")
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
        let plaintext: [UInt8]
        do {
            let box = try ChaChaPoly.SealedBox(
                nonce: NoiseNonce.make(counter),
                ciphertext: message[WireSize.transportHeader..<(message.count - WireSize.tag)],
                tag: message[(message.count - WireSize.tag)...])
            plaintext = Array(try ChaChaPoly.open(box, using: receiveKey))
        } catch {
            throw .decryptionFailed(stage: "transport")
        }
        guard replayWindow.accept(counter) else { throw .replayedCounter(counter) }
        lastReceived = now
        return plaintext
    }
}
