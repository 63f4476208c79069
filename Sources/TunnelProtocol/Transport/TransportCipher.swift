import CTunnelCrypto
import Crypto

/// One direction's ChaCha20-Poly1305 key, sealing and opening transport messages in the caller's
/// buffer (see `CTunnelCrypto`). Immutable after creation, so data-plane threads use it without
/// a lock; counters and the replay window stay in `TransportSession`.
public final class TransportCipher: Sendable {
    private nonisolated(unsafe) let context: OpaquePointer

    init?(_ key: SymmetricKey) {
        guard key.bitCount == 256 else { return nil }
        let context = key.withUnsafeBytes { bytes in
            netext_aead_new(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard let context else { return nil }
        self.context = context
    }

    deinit { netext_aead_free(context) }

    /// Builds a transport message in `message`: the packet must already be at
    /// `WireSize.transportHeader`; it is padded with zeros to a multiple of 16, encrypted in place
    /// and followed by the tag. `message` needs room for header, padded packet and tag
    /// (`TransportCipher.messageLength(packetLength:)`). Returns the message length.
    @inline(__always)
    public func seal(packetLength: Int, in message: UnsafeMutableRawBufferPointer, receiverIndex: UInt32, counter: UInt64) -> Int {
        let padded = Self.paddedLength(packetLength)
        let base = message.baseAddress!
        base.storeBytes(of: UInt32(MessageType.transportData.rawValue).littleEndian, as: UInt32.self)  // type byte, then three zero bytes
        base.storeBytes(of: receiverIndex.bigEndian, toByteOffset: 4, as: UInt32.self)
        base.storeBytes(of: counter.bigEndian, toByteOffset: 8, as: UInt64.self)
        let payload = base.advanced(by: WireSize.transportHeader).assumingMemoryBound(to: UInt8.self)
        if padded > packetLength { (payload + packetLength).initialize(repeating: 0, count: padded - packetLength) }
        let result = netext_aead_seal(context, counter, payload, padded)
        precondition(result == 0, "ChaCha20-Poly1305 seal failed")
        return WireSize.transportHeader + padded + WireSize.tag
    }

    /// Authenticates and decrypts a transport message in place. Returns the padded plaintext's
    /// length (at `WireSize.transportHeader`), or nil if the message is malformed or forged.
    @inline(__always)
    public func open(_ message: UnsafeMutableRawBufferPointer, counter: UInt64) -> Int? {
        let sealedLength = message.count - WireSize.transportHeader
        guard sealedLength >= WireSize.tag, (sealedLength - WireSize.tag) % TransportSession.paddingMultiple == 0 else { return nil }
        let payload = message.baseAddress!.advanced(by: WireSize.transportHeader).assumingMemoryBound(to: UInt8.self)
        let result = netext_aead_open(context, counter, payload, sealedLength)
        return result >= 0 ? Int(result) : nil
    }

    /// The length of the padded packet.
    @inline(__always)
    public static func paddedLength(_ packetLength: Int) -> Int {
        (packetLength + TransportSession.paddingMultiple - 1) / TransportSession.paddingMultiple * TransportSession.paddingMultiple
    }

    /// The length of the transport message carrying a packet of `packetLength` bytes.
    @inline(__always)
    public static func messageLength(packetLength: Int) -> Int {
        WireSize.transportHeader + paddedLength(packetLength) + WireSize.tag
    }
}
