/// Splits a stream of DNS messages as TCP carries them — each after its two-byte length
/// (RFC 1035 §4.2.2, RFC 7766 §8) — for code that reads a socket itself rather than through a
/// NIO pipeline (``DNSLengthFrameDecoder`` is the pipeline's). Bytes are appended as they are
/// read; whole messages come out in order, and at most one partial message (≤ 65,537 bytes) is
/// kept between reads.
public struct DNSStreamSplitter: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    /// Bytes read and not yet part of a returned message.
    public var bufferedCount: Int { pending.count }

    /// Takes `bytes` and returns the messages they complete, in order. A frame of length 0 comes
    /// out as an empty message (not a DNS message: the caller drops it).
    public mutating func append(_ bytes: some Collection<UInt8>) -> [[UInt8]] {
        pending.append(contentsOf: bytes)
        var messages: [[UInt8]] = []
        var offset = 0
        while pending.count - offset >= 2 {
            let length = Int(pending[offset]) << 8 | Int(pending[offset + 1])
            guard pending.count - offset >= 2 + length else { break }
            messages.append(Array(pending[(offset + 2)..<(offset + 2 + length)]))
            offset += 2 + length
        }
        if offset > 0 { pending.removeFirst(offset) }
        return messages
    }

    /// `message` with its two-byte length before it; nil for one longer than 65,535 bytes.
    public static func frame(_ message: [UInt8]) -> [UInt8]? {
        guard message.count <= Int(UInt16.max) else { return nil }
        return [UInt8(message.count >> 8), UInt8(message.count & 0xff)] + message
    }
}
