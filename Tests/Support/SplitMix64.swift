/// SplitMix64: a small deterministic generator, so a failing property or fuzz case repeats
/// from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(state: UInt64) {
        self.state = state
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

extension SplitMix64 {
    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    /// A number in `0..<bound`.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
