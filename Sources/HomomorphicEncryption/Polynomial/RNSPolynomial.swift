import CHomomorphicKernels
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A polynomial in `Z_Q[X]/(X^N + 1)` held in residue-number-system form: one row of N
/// residues per prime of `Q`, rows stored one after another.
///
/// `isNTT` says whether the rows hold coefficients or NTT evaluations; arithmetic checks it.
public struct RNSPolynomial: Sendable, Equatable {
    public let degree: Int
    /// How many primes (rows) the polynomial has.
    public private(set) var moduliCount: Int
    /// Row `i` is `storage[i*N ..< (i+1)*N]`.
    public var storage: [UInt32]
    /// True when the rows hold NTT evaluations rather than coefficients.
    public var isNTT: Bool

    /// The zero polynomial.
    public init(degree: Int, moduliCount: Int, isNTT: Bool) {
        self.degree = degree
        self.moduliCount = moduliCount
        self.storage = [UInt32](repeating: 0, count: degree * moduliCount)
        self.isNTT = isNTT
    }

    /// A polynomial from NTT residues (row after row); the caller checks each is below its prime.
    public init(ntt storage: [UInt32], degree: Int, moduliCount: Int) {
        self.init(degree: degree, moduliCount: moduliCount, isNTT: true, storage: storage)
    }

    init(degree: Int, moduliCount: Int, isNTT: Bool, storage: [UInt32]) {
        precondition(storage.count == degree * moduliCount)
        self.degree = degree
        self.moduliCount = moduliCount
        self.storage = storage
        self.isNTT = isNTT
    }

    /// The residues modulo the `index`-th prime.
    public func row(_ index: Int) -> ArraySlice<UInt32> {
        storage[index * degree ..< (index + 1) * degree]
    }

    /// Removes the last prime's row (without rescaling; see `BFV.modSwitchDown` for that).
    public mutating func dropLastRow() {
        storage.removeLast(degree)
        moduliCount -= 1
    }

    /// Keeps the first `count` rows.
    public mutating func keepRows(_ count: Int) {
        precondition(count <= moduliCount)
        storage.removeLast((moduliCount - count) * degree)
        moduliCount = count
    }

    /// Overwrites every residue with zero (for secrets), in a way the optimizer keeps.
    ///
    /// The shared buffer itself is overwritten (not a copy-on-write copy), so every holder of
    /// this polynomial sees zeros afterwards: call it only when the value is done with.
    public func zeroize() {
        storage.withUnsafeBytes { bytes in
            zeroizeBytes(UnsafeMutableRawBufferPointer(mutating: bytes))
        }
    }

    /// Applies `body(row, modulusIndex)` to each row's buffer.
    @inlinable
    mutating func forEachRow(_ body: (UnsafeMutableBufferPointer<UInt32>, Int) -> Void) {
        let n = degree
        let count = moduliCount
        storage.withUnsafeMutableBufferPointer { all in
            for i in 0..<count {
                body(UnsafeMutableBufferPointer(rebasing: all[i * n ..< (i + 1) * n]), i)
            }
        }
    }

    /// Converts coefficient rows to NTT form with the given per-prime transforms.
    public mutating func forwardNTT(_ tables: [NTT]) {
        precondition(!isNTT && tables.count >= moduliCount)
        forEachRow { row, i in tables[i].forward(row) }
        isNTT = true
    }

    /// Converts NTT rows back to coefficients.
    public mutating func inverseNTT(_ tables: [NTT]) {
        precondition(isNTT && tables.count >= moduliCount)
        forEachRow { row, i in tables[i].inverse(row) }
        isNTT = false
    }

    /// `self += other` residue-wise.
    public mutating func add(_ other: RNSPolynomial, moduli: [Modulus]) {
        precondition(other.isNTT == isNTT && other.moduliCount >= moduliCount && other.degree == degree)
        let n = degree
        other.storage.withUnsafeBufferPointer { b in
            forEachRow { row, i in
                let q = moduli[i]
                for j in 0..<n { row[j] = q.add(row[j], b[i &* n &+ j]) }
            }
        }
    }

    /// `self −= other` residue-wise.
    public mutating func subtract(_ other: RNSPolynomial, moduli: [Modulus]) {
        precondition(other.isNTT == isNTT && other.moduliCount >= moduliCount && other.degree == degree)
        let n = degree
        other.storage.withUnsafeBufferPointer { b in
            forEachRow { row, i in
                let q = moduli[i]
                for j in 0..<n { row[j] = q.subtract(row[j], b[i &* n &+ j]) }
            }
        }
    }

    /// `self = −self`.
    public mutating func negate(moduli: [Modulus]) {
        forEachRow { row, i in
            let q = moduli[i]
            for j in 0..<row.count { row[j] = q.negate(row[j]) }
        }
    }

    /// `self *= other` pointwise; both must be in NTT form.
    public mutating func multiply(_ other: RNSPolynomial, moduli: [Modulus]) {
        precondition(isNTT && other.isNTT && other.moduliCount >= moduliCount)
        let n = degree
        other.storage.withUnsafeBufferPointer { b in
            forEachRow { row, i in
                let q = moduli[i]
                for j in 0..<n { row[j] = q.multiply(row[j], b[i &* n &+ j]) }
            }
        }
    }

    /// `self += a · b` pointwise; all in NTT form.
    public mutating func multiplyAdd(_ a: RNSPolynomial, _ b: RNSPolynomial, moduli: [Modulus]) {
        precondition(isNTT && a.isNTT && b.isNTT && a.moduliCount >= moduliCount && b.moduliCount >= moduliCount)
        let n = degree
        a.storage.withUnsafeBufferPointer { x in
            b.storage.withUnsafeBufferPointer { y in
                forEachRow { row, i in
                    let q = moduli[i]
                    let (c, cs, r) = q.wideReductionConstants
                    netext_he_multiply_add_mod(
                        row.baseAddress!, x.baseAddress! + i &* n, y.baseAddress! + i &* n, n, q.value, c, cs, r)
                }
            }
        }
    }

    /// `self *= scalar_i` with one scalar per prime.
    public mutating func multiply(scalars: [UInt32], moduli: [Modulus]) {
        forEachRow { row, i in
            let q = moduli[i]
            let s = scalars[i], sp = q.shoup(s)
            for j in 0..<row.count { row[j] = q.multiplyShoup(row[j], s, sp) }
        }
    }
}

/// Writes zeros over `bytes` with `explicit_bzero`, which the optimizer may not remove.
func zeroizeBytes(_ bytes: UnsafeMutableRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    explicit_bzero(base, bytes.count)
}
