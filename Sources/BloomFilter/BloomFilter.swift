import Foundation

/// A Bloom filter bit-compatible with Apple's URL filter prefilter (`NEURLFilterPrefilter`:
/// `data`, `bitCount`, `hashCount`, `murmurSeed`), so a prefilter built for Apple devices works
/// here and one built here works there:
/// - h1 = FNV-1a 32 of the key's UTF-8 bytes; h2 = MurmurHash3_x86_32 of them with `murmurSeed`;
/// - the i-th bit (i in 0..<hashCount) is ((h1 + i·h2) mod 2^32) mod bitCount;
/// - bit j is bit j % 8 (least significant first) of byte j / 8; there are ceil(bitCount / 8) bytes.
/// A negative answer is certain; a positive one is wrong with about the configured probability.
public struct BloomFilter: Sendable, Hashable {
    public let bitCount: Int
    public let hashCount: Int
    public let murmurSeed: UInt32
    /// The filter's bytes, exactly as `NEURLFilterPrefilter.data` holds them.
    public private(set) var data: [UInt8]

    /// An empty filter sized for `capacity` keys at `falsePositiveRate`:
    /// bitCount = ceil(−n·ln p / (ln 2)²), hashCount = ceil(bitCount / n · ln 2).
    public init(capacity: Int, falsePositiveRate: Double, murmurSeed: UInt32) throws(BloomFilterError) {
        guard capacity > 0 else { throw .invalidParameter("capacity must be positive, not \(capacity)") }
        guard falsePositiveRate > 0, falsePositiveRate < 1 else {
            throw .invalidParameter("falsePositiveRate must be in (0, 1), not \(falsePositiveRate)")
        }
        let n = Double(capacity)
        let bits = (-n * log(falsePositiveRate) / (log(2.0) * log(2.0))).rounded(.up)
        guard bits <= Double(UInt32.max) else { throw .invalidParameter("\(capacity) keys at \(falsePositiveRate) need more than 2^32 bits") }
        let bitCount = max(1, Int(bits))
        let hashCount = max(1, Int((Double(bitCount) / n * log(2.0)).rounded(.up)))
        self.init(unchecked: [UInt8](repeating: 0, count: (bitCount + 7) / 8), bitCount: bitCount, hashCount: hashCount, murmurSeed: murmurSeed)
    }

    /// A filter from its parts (for example a prefilter fetched from a server). The data must be
    /// exactly ceil(bitCount / 8) bytes.
    public init(data: [UInt8], bitCount: Int, hashCount: Int, murmurSeed: UInt32) throws(BloomFilterError) {
        guard bitCount > 0, bitCount <= Int(UInt32.max) else { throw .invalidParameter("bitCount must be in 1...2^32-1, not \(bitCount)") }
        guard hashCount > 0, hashCount <= 64 else { throw .invalidParameter("hashCount must be in 1...64, not \(hashCount)") }
        guard data.count == (bitCount + 7) / 8 else {
            throw .invalidParameter("data holds \(data.count) bytes; bitCount \(bitCount) needs \((bitCount + 7) / 8)")
        }
        self.init(unchecked: data, bitCount: bitCount, hashCount: hashCount, murmurSeed: murmurSeed)
    }

    private init(unchecked data: [UInt8], bitCount: Int, hashCount: Int, murmurSeed: UInt32) {
        self.data = data
        self.bitCount = bitCount
        self.hashCount = hashCount
        self.murmurSeed = murmurSeed
    }

    /// Adds a key.
    public mutating func insert(_ key: String) {
        var copy = key
        copy.withUTF8 { insert(bytes: UnsafeRawBufferPointer($0)) }
    }

    public mutating func insert(bytes: UnsafeRawBufferPointer) {
        let h1 = FNV1a.hash32(bytes)
        let h2 = MurmurHash3.x86_32(bytes, seed: murmurSeed)
        let modulus = UInt32(truncatingIfNeeded: bitCount)
        for i in 0..<UInt32(hashCount) {
            let bit = Int((h1 &+ i &* h2) % modulus)
            data[bit >> 3] |= 1 << UInt8(bit & 7)
        }
    }

    /// Whether the key may be in the set (false means certainly not).
    public func contains(_ key: String) -> Bool {
        var copy = key
        return copy.withUTF8 { contains(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The first probe, (h1 + 0·h2) mod m, needs only FNV-1a: MurmurHash3 is computed only for
    /// keys that pass it (about half of absent keys stop there).
    @inlinable
    public func contains(bytes: UnsafeRawBufferPointer) -> Bool {
        contains(bytes: bytes, fnv: FNV1a.hash32(bytes))
    }

    /// Four lookups at once: the four FNV-1a chains (one serial multiply per byte each) run
    /// interleaved, so the processor overlaps them — how a URL's keys are checked together.
    @inlinable
    public func contains(
        _ k0: UnsafeRawBufferPointer, _ k1: UnsafeRawBufferPointer, _ k2: UnsafeRawBufferPointer, _ k3: UnsafeRawBufferPointer
    ) -> (Bool, Bool, Bool, Bool) {
        let prime = FNV1a.prime
        var h0 = FNV1a.offsetBasis, h1 = h0, h2 = h0, h3 = h0
        let common = min(min(k0.count, k1.count), min(k2.count, k3.count))
        for i in 0..<common {
            h0 = (h0 ^ UInt32(k0[i])) &* prime
            h1 = (h1 ^ UInt32(k1[i])) &* prime
            h2 = (h2 ^ UInt32(k2[i])) &* prime
            h3 = (h3 ^ UInt32(k3[i])) &* prime
        }
        for i in common..<k0.count { h0 = (h0 ^ UInt32(k0[i])) &* prime }
        for i in common..<k1.count { h1 = (h1 ^ UInt32(k1[i])) &* prime }
        for i in common..<k2.count { h2 = (h2 ^ UInt32(k2[i])) &* prime }
        for i in common..<k3.count { h3 = (h3 ^ UInt32(k3[i])) &* prime }
        return (contains(bytes: k0, fnv: h0), contains(bytes: k1, fnv: h1), contains(bytes: k2, fnv: h2), contains(bytes: k3, fnv: h3))
    }

    /// The first probe alone, (h1 + 0·h2) mod m, from a key's FNV-1a hash: false means the key
    /// is certainly absent; true means `contains(bytes:)` must decide. Lets a caller that hashes
    /// many nested keys in one streaming FNV-1a pass skip MurmurHash3 for nearly all of them.
    @inlinable
    public func passesFirstProbe(fnv h1: UInt32) -> Bool {
        let first = Int(h1 % UInt32(truncatingIfNeeded: bitCount))
        return data.withUnsafeBufferPointer { $0[first >> 3] & (1 << UInt8(first & 7)) != 0 }
    }

    /// A lookup whose FNV-1a hash is already known (a streaming caller computed it).
    @inlinable
    public func contains(bytes: UnsafeRawBufferPointer, fnv h1: UInt32) -> Bool {
        let modulus = UInt32(truncatingIfNeeded: bitCount)
        return data.withUnsafeBufferPointer { filter in
            let first = Int(h1 % modulus)
            if filter[first >> 3] & (1 << UInt8(first & 7)) == 0 { return false }
            let h2 = MurmurHash3.x86_32(bytes, seed: murmurSeed)
            for i in 1..<UInt32(max(hashCount, 1)) {
                let bit = Int((h1 &+ i &* h2) % modulus)
                if filter[bit >> 3] & (1 << UInt8(bit & 7)) == 0 { return false }
            }
            return true
        }
    }

    /// The expected false-positive rate after `count` insertions: (1 − e^(−k·n/m))^k.
    public func expectedFalsePositiveRate(afterInserting count: Int) -> Double {
        pow(1 - exp(-Double(hashCount) * Double(count) / Double(bitCount)), Double(hashCount))
    }
}

/// Why a Bloom filter could not be made; the message names the parameter and the allowed values.
public enum BloomFilterError: Error, Sendable, Hashable, CustomStringConvertible {
    case invalidParameter(String)
    public var description: String {
        switch self {
        case .invalidParameter(let message): message
        }
    }
}
