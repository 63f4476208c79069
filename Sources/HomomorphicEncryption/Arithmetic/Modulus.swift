/// A word-sized modulus `q < 2^30` with the constants for fast, branch-free reduction.
///
/// Coefficients are stored as `UInt32`. Keeping `q` below 2^30 leaves room for Harvey's lazy
/// butterflies (values up to `4q`) and lets inner products add 2^4 products of two 30-bit values
/// in a `UInt64` before reducing (28-bit moduli allow 2^8).
public struct Modulus: Sendable, Hashable, CustomStringConvertible {
    /// The modulus.
    public let value: UInt32
    /// `floor(2^64 / q)`, for Barrett reduction of 64-bit values.
    @usableFromInline let barrett: UInt64
    let wideC: UInt32, wideCShoup: UInt32, wideR: UInt32

    /// The largest modulus this type accepts (exclusive).
    public static let limit: UInt32 = 1 << 30

    /// Creates a modulus; fails for values below 2 or at/above ``limit``.
    public init(_ value: UInt32) throws(HomomorphicEncryptionError) {
        guard value >= 2, value < Modulus.limit else {
            throw .invalidModulus(value: UInt64(value), reason: "must be in 2..<2^30")
        }
        self.value = value
        self.barrett = UInt64.max / UInt64(value) &+ (UInt64.max % UInt64(value) == UInt64(value) &- 1 ? 1 : 0)
        let c = UInt32((UInt64(1) << 32) % UInt64(value))
        wideC = c
        wideCShoup = UInt32((UInt64(c) << 32) / UInt64(value))
        wideR = UInt32((UInt64(1) << 32) / UInt64(value))
    }

    public var description: String { String(value) }

    /// Constants of the vectorized 64-bit reduction (`netext_he_reduce64`): 2^32 mod q, its Shoup
    /// companion, and ⌊2^32 / q⌋ (the Shoup companion of 1).
    public var wideReductionConstants: (c: UInt32, cShoup: UInt32, r: UInt32) {
        (wideC, wideCShoup, wideR)
    }

    /// Number of significant bits of `q`.
    public var bitWidth: Int { 32 - value.leadingZeroBitCount }

    /// `x mod q` for any 64-bit `x`, without a data-dependent branch.
    @inlinable @inline(__always)
    public func reduce(_ x: UInt64) -> UInt32 {
        let estimate = x.multipliedFullWidth(by: barrett).high
        let r = UInt32(truncatingIfNeeded: x &- estimate &* UInt64(value))
        return subtractIfAtLeast(r)
    }

    /// `r - q` when `r ≥ q`, else `r`; `r` must be below `2q`.
    @inlinable @inline(__always)
    public func subtractIfAtLeast(_ r: UInt32) -> UInt32 {
        let d = r &- value
        let mask = UInt32(bitPattern: Int32(bitPattern: d) >> 31)
        return d &+ (value & mask)
    }

    /// `(a + b) mod q` for `a, b < q`.
    @inlinable @inline(__always)
    public func add(_ a: UInt32, _ b: UInt32) -> UInt32 { subtractIfAtLeast(a &+ b) }

    /// `(a − b) mod q` for `a, b < q`.
    @inlinable @inline(__always)
    public func subtract(_ a: UInt32, _ b: UInt32) -> UInt32 { subtractIfAtLeast(a &+ value &- b) }

    /// `(−a) mod q` for `a < q`.
    @inlinable @inline(__always)
    public func negate(_ a: UInt32) -> UInt32 { subtractIfAtLeast(value &- a) }

    /// `(a · b) mod q`.
    @inlinable @inline(__always)
    public func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 { reduce(UInt64(a) &* UInt64(b)) }

    /// Shoup's companion of a fixed multiplicand `w < q`: `floor(w · 2^32 / q)`.
    @inlinable
    public func shoup(_ w: UInt32) -> UInt32 { UInt32((UInt64(w) << 32) / UInt64(value)) }

    /// `x · w mod q` in `[0, 2q)` for any 32-bit `x`, given `wShoup = shoup(w)`.
    @inlinable @inline(__always)
    public func multiplyShoupLazy(_ x: UInt32, _ w: UInt32, _ wShoup: UInt32) -> UInt32 {
        let q = UInt32(truncatingIfNeeded: (UInt64(x) &* UInt64(wShoup)) >> 32)
        return x &* w &- q &* value
    }

    /// `x · w mod q` in `[0, q)`, given `wShoup = shoup(w)`.
    @inlinable @inline(__always)
    public func multiplyShoup(_ x: UInt32, _ w: UInt32, _ wShoup: UInt32) -> UInt32 {
        subtractIfAtLeast(multiplyShoupLazy(x, w, wShoup))
    }

    /// `base^exponent mod q`.
    public func power(_ base: UInt32, _ exponent: UInt64) -> UInt32 {
        var result: UInt32 = 1 % value
        var b = base % value
        var e = exponent
        while e > 0 {
            if e & 1 == 1 { result = multiply(result, b) }
            b = multiply(b, b)
            e >>= 1
        }
        return result
    }

    /// The multiplicative inverse of `a` modulo a prime `q` (Fermat); fails when `a ≡ 0`.
    public func inverse(_ a: UInt32) throws(HomomorphicEncryptionError) -> UInt32 {
        guard a % value != 0 else { throw .notInvertible(value: UInt64(a), modulus: UInt64(value)) }
        return power(a, UInt64(value) - 2)
    }

    /// The centered representative of `a < q` in `(−q/2, q/2]`.
    @inlinable @inline(__always)
    public func centered(_ a: UInt32) -> Int64 {
        a > value / 2 ? Int64(a) - Int64(value) : Int64(a)
    }

    /// `a mod q` for a signed `a`.
    @inlinable @inline(__always)
    public func reduce(signed a: Int64) -> UInt32 {
        let r = a % Int64(value)
        return UInt32(r < 0 ? r + Int64(value) : r)
    }
}
