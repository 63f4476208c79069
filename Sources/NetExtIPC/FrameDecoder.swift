/// Length-prefixed framing of the control protocol: each message is a 4-byte big-endian
/// length followed by that many bytes of UTF-8 JSON. See `docs/control-protocol.md`.
public struct FrameDecoder: Sendable {
    /// The largest frame accepted (4 MiB); a larger announced length is a protocol error.
    public static let maximumFrameLength = 4 * 1024 * 1024

    private var buffer: [UInt8] = []
    private var readIndex = 0

    public init() {}

    /// Adds received bytes.
    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
    }

    /// Returns the next complete frame's payload, or nil if more bytes are needed.
    public mutating func nextFrame() throws(FrameError) -> [UInt8]? {
        let available = buffer.count - readIndex
        guard available >= 4 else { return nil }
        let length = Int(buffer[readIndex]) << 24 | Int(buffer[readIndex + 1]) << 16
            | Int(buffer[readIndex + 2]) << 8 | Int(buffer[readIndex + 3])
        guard length <= Self.maximumFrameLength else {
            throw FrameError(announcedLength: length)
        }
        guard available >= 4 + length else { return nil }
        let start = readIndex + 4
        let frame = Array(buffer[start..<start + length])
        readIndex = start + length
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex > 65_536 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        return frame
    }

    /// Frames a payload: the 4-byte big-endian length, then the payload.
    public static func frame(_ payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count)
        var framed: [UInt8] = [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
        framed.append(contentsOf: payload)
        return framed
    }
}

/// A frame announced a length above the connection's limit (`FrameDecoder.maximumFrameLength`
/// unless the connection set a smaller one).
public struct FrameError: Error, Sendable, Hashable, CustomStringConvertible {
    public var announcedLength: Int
    public var limit: Int
    public init(announcedLength: Int, limit: Int = FrameDecoder.maximumFrameLength) {
        self.announcedLength = announcedLength
        self.limit = limit
    }
    public var description: String {
        "control frame of \(announcedLength) bytes exceeds the maximum of \(limit)"
    }
}
