/// A small arbitrary-precision unsigned integer (little-endian 64-bit limbs) for the few places
/// that need exact big values: CRT composition for noise measurement and constant set-up.
/// Not constant-time; never used on secrets outside diagnostics.
public struct WideUInt: Sendable, Hashable, Comparable, CustomStringConvertible {
    public private(set) var limbs: [UInt64]

    public init(_ value: UInt64 = 0) { limbs = [value]; normalize() }

    init(limbs: [UInt64]) { self.limbs = limbs; normalize() }

    private mutating func normalize() {
        while limbs.count > 1, limbs.last == 0 { limbs.removeLast() }
        if limbs.isEmpty { limbs = [0] }
    }

    public var isZero: Bool { limbs == [0] }

    /// Number of significant bits.
    public var bitWidth: Int {
        let top = limbs.count - 1
        return top * 64 + (64 - limbs[top].leadingZeroBitCount)
    }

    public static func + (a: WideUInt, b: WideUInt) -> WideUInt {
        var out = [UInt64](repeating: 0, count: max(a.limbs.count, b.limbs.count) + 1)
        var carry: UInt64 = 0
        for i in 0..<(out.count - 1) {
            let x = i < a.limbs.count ? a.limbs[i] : 0
            let y = i < b.limbs.count ? b.limbs[i] : 0
            let (s1, o1) = x.addingReportingOverflow(y)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            out[i] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        out[out.count - 1] = carry
        return WideUInt(limbs: out)
    }

    /// `a − b`; requires `a ≥ b`.
    public static func - (a: WideUInt, b: WideUInt) -> WideUInt {
        precondition(a >= b, "WideUInt subtraction underflow")
        var out = a.limbs
        var borrow: UInt64 = 0
        for i in 0..<out.count {
            let y = i < b.limbs.count ? b.limbs[i] : 0
            let (d1, o1) = out[i].subtractingReportingOverflow(y)
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            out[i] = d2
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return WideUInt(limbs: out)
    }

    public static func * (a: WideUInt, b: UInt64) -> WideUInt {
        var out = [UInt64](repeating: 0, count: a.limbs.count + 1)
        var carry: UInt64 = 0
        for i in 0..<a.limbs.count {
            let (high, low) = a.limbs[i].multipliedFullWidth(by: b)
            let (sum, overflow) = low.addingReportingOverflow(carry)
            out[i] = sum
            carry = high &+ (overflow ? 1 : 0)
        }
        out[a.limbs.count] = carry
        return WideUInt(limbs: out)
    }

    public static func * (a: WideUInt, b: WideUInt) -> WideUInt {
        var result = WideUInt()
        for (i, limb) in b.limbs.enumerated() {
            var partial = a * limb
            partial.limbs.insert(contentsOf: [UInt64](repeating: 0, count: i), at: 0)
            result = result + partial
        }
        return result
    }

    /// `(quotient, remainder)` of division by a word.
    public func quotientAndRemainder(dividingBy d: UInt64) -> (quotient: WideUInt, remainder: UInt64) {
        precondition(d != 0)
        var out = [UInt64](repeating: 0, count: limbs.count)
        var remainder: UInt64 = 0
        for i in stride(from: limbs.count - 1, through: 0, by: -1) {
            let (q, r) = d.dividingFullWidth((remainder, limbs[i]))
            out[i] = q
            remainder = r
        }
        return (WideUInt(limbs: out), remainder)
    }

    public static func < (a: WideUInt, b: WideUInt) -> Bool {
        if a.limbs.count != b.limbs.count { return a.limbs.count < b.limbs.count }
        for i in stride(from: a.limbs.count - 1, through: 0, by: -1) where a.limbs[i] != b.limbs[i] {
            return a.limbs[i] < b.limbs[i]
        }
        return false
    }

    public var description: String {
        if isZero { return "0" }
        var digits: [Character] = []
        var value = self
        while !value.isZero {
            let (q, r) = value.quotientAndRemainder(dividingBy: 10)
            digits.append(Character(String(r)))
            value = q
        }
        return String(digits.reversed())
    }

    /// The value as a Double (rounded).
    public var doubleValue: Double {
        limbs.reversed().reduce(0.0) { $0 * 18_446_744_073_709_551_616.0 + Double($1) }
    }
}
