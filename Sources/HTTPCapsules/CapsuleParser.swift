import VariableLengthIntegers

/// Splits a stream's bytes into capsules as they arrive, in whatever pieces the transport
/// delivers them (a capsule may span DATA frames, a frame may hold several capsules). Holds at
/// most one incomplete capsule; refuses one announcing a value over `maximumValueLength` before
/// its value arrives, so a peer cannot make it buffer without bound.
public struct CapsuleParser: Sendable {
    /// The longest value accepted. 65,535 + 8 holds any UDP payload with its context ID; a
    /// connect-ip tunnel's IP packets are smaller than its MTU.
    public let maximumValueLength: Int
    private var buffer: [UInt8] = []
    /// Where the buffer's first unread byte is.
    private var start = 0
    /// The stream offset of `buffer[0]`.
    private var bufferStreamOffset = 0

    public init(maximumValueLength: Int = 65_543) {
        self.maximumValueLength = maximumValueLength
    }

    /// Bytes received and not yet returned as a capsule.
    public var bufferedCount: Int { buffer.count - start }

    /// Adds what the stream delivered.
    public mutating func append<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        if start > 0, start == buffer.count {
            bufferStreamOffset += start
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4_096, start * 2 > buffer.count {
            bufferStreamOffset += start
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole capsule, nil until more bytes arrive.
    public mutating func next() throws(CapsuleError) -> Capsule? {
        var offset = start
        guard let type = QUICVarint.read(buffer, &offset), let length = QUICVarint.read(buffer, &offset) else { return nil }
        guard length <= UInt64(maximumValueLength) else {
            throw .valueTooLong(type: type, length: length, limit: maximumValueLength, offset: bufferStreamOffset + start)
        }
        let end = offset + Int(length)
        guard end <= buffer.count else { return nil }
        let capsule = Capsule(type: type, value: Array(buffer[offset..<end]))
        start = end
        return capsule
    }

    /// Every whole capsule buffered now.
    public mutating func all() throws(CapsuleError) -> [Capsule] {
        var capsules: [Capsule] = []
        while let capsule = try next() { capsules.append(capsule) }
        return capsules
    }

    /// The stream ended: fails if a capsule was left incomplete.
    public func finish() throws(CapsuleError) {
        guard bufferedCount == 0 else { throw .truncatedStream(bufferedBytes: bufferedCount, offset: bufferStreamOffset + start) }
    }
}
