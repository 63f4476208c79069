import NetExtCore

/// The CRYPTO stream of a QUIC client's Initial packets put back in order (RFC 9000 §19.6:
/// each CRYPTO frame carries an offset; clients may send them out of order and across
/// datagrams), as far as it is contiguous from its first byte. Bounded: bytes beyond
/// `TLSClientHello.limit` are ignored.
public struct QUICCryptoStream: Sendable, Hashable {
    /// One CRYPTO frame's offset and data.
    public struct Frame: Sendable, Hashable {
        public var offset: Int
        public var data: [UInt8]
        public init(offset: Int, data: [UInt8]) {
            self.offset = offset
            self.data = data
        }
    }

    /// The contiguous bytes from offset 0.
    public private(set) var prefix: [UInt8] = []
    private var pending: [Int: [UInt8]] = [:]
    /// Initial datagrams read so far.
    public private(set) var datagrams = 0
    static let limit = TLSClientHello.limit + 4

    public init() {}

    public mutating func add(_ frames: [Frame]) {
        datagrams += 1
        for frame in frames where frame.offset < Self.limit && !frame.data.isEmpty {
            let data = frame.data.prefix(Self.limit - frame.offset)
            if let existing = pending[frame.offset], existing.count >= data.count { continue }
            pending[frame.offset] = Array(data)
        }
        while let (offset, data) = pending.first(where: { $0.key <= prefix.count }) {
            pending[offset] = nil
            if offset + data.count > prefix.count { prefix += data[(prefix.count - offset)...] }
        }
    }
}
