import Foundation

/// A URL filter's Bloom prefilter as a control provider hands it to netextd (Apple's
/// `NEURLFilterPrefilter`): the bit array — inline, or in a file for large filters — and the
/// parameters that define its hashing (FNV-1a and MurmurHash3 double hashing, docs/url-filter.md).
public struct URLFilterPrefilter: Sendable, Hashable, Codable {
    /// The bits, least significant bit first within each byte; `nil` when `path` holds them.
    public var data: Data?
    /// A file holding the bits, readable by netextd.
    public var path: String?
    public var bitCount: Int
    public var hashCount: Int
    public var murmurSeed: UInt32

    /// Largest prefilter netextd accepts (bits), about 64 MiB.
    public static let maximumBitCount = 1 << 29

    public init(data: Data, bitCount: Int, hashCount: Int, murmurSeed: UInt32) {
        self.data = data
        self.bitCount = bitCount
        self.hashCount = hashCount
        self.murmurSeed = murmurSeed
    }

    public init(path: String, bitCount: Int, hashCount: Int, murmurSeed: UInt32) {
        self.path = path
        self.bitCount = bitCount
        self.hashCount = hashCount
        self.murmurSeed = murmurSeed
    }

    /// The bytes, read from `path` when not inline; checks every parameter and names the one
    /// at fault.
    public func resolvedBytes() throws(NetExtError) -> [UInt8] {
        guard bitCount > 0, bitCount <= Self.maximumBitCount else {
            throw .invalid("prefilter bitCount \(bitCount) is outside 1…\(Self.maximumBitCount)")
        }
        guard (1...64).contains(hashCount) else { throw .invalid("prefilter hashCount \(hashCount) is outside 1…64") }
        let bytes: [UInt8]
        switch (data, path) {
        case let (data?, nil): bytes = [UInt8](data)
        case let (nil, path?):
            guard let contents = FileManager.default.contents(atPath: path) else { throw .invalid("prefilter file \(path) cannot be read") }
            bytes = [UInt8](contents)
        default: throw .invalid("a prefilter needs exactly one of data and path")
        }
        let expected = (bitCount + 7) / 8
        guard bytes.count == expected else {
            throw .invalid("prefilter holds \(bytes.count) bytes; bitCount \(bitCount) needs \(expected)")
        }
        return bytes
    }
}
