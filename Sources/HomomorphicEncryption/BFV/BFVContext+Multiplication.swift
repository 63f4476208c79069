import CHomomorphicKernels

/// A ciphertext lifted to Q·B in NTT form, ready to be tensored with another.
public struct ExtendedCiphertext: Sendable {
    public var polys: [RNSPolynomial]
    public var level: Int
}

/// A running sum of ciphertext tensor products in Q·B (three polynomials, NTT form), scaled
/// down to one ciphertext by `BFVContext.finish(_:)`. Summing before scaling rounds once
/// instead of once per product.
public struct ProductAccumulator: Sendable {
    public var polys: [RNSPolynomial]
    public let level: Int
    public private(set) var count = 0

    init(polys: [RNSPolynomial], level: Int) {
        self.polys = polys
        self.level = level
    }

    mutating func noteProduct() { count += 1 }
}

extension BFVContext {
    /// The primes of Q·B at a level: ciphertext primes then the auxiliary ones.
    func extendedModuli(level: Int) -> [Modulus] { Array(moduli.prefix(level)) + auxiliaryModuli }
    func extendedTransforms(level: Int) -> [NTT] { Array(transforms.prefix(level)) + auxiliaryTransforms }

    /// Lifts a two-polynomial ciphertext to Q·B (centered representatives), NTT form.
    public func extendForMultiplication(_ ciphertext: Ciphertext) throws(HomomorphicEncryptionError) -> ExtendedCiphertext {
        guard ciphertext.polys.count == 2 else { throw .wrongPolynomialCount(got: ciphertext.polys.count, expected: 2) }
        let level = ciphertext.level
        let n = degree
        let polys = ciphertext.polys.map { poly -> RNSPolynomial in
            var evaluations = poly, coefficients = poly
            convert(&evaluations, toNTT: true)
            convert(&coefficients, toNTT: false)
            var lifted = liftToAuxiliary(coefficients)
            // The Q rows keep the evaluations we already have; only the B rows are transformed.
            lifted.storage.replaceSubrange(0..<(level * n), with: evaluations.storage)
            lifted.storage.withUnsafeMutableBufferPointer { rows in
                for a in 0..<auxiliaryModuli.count {
                    auxiliaryTransforms[a].forward(UnsafeMutableBufferPointer(rebasing: rows[((level + a) * n)..<((level + a + 1) * n)]))
                }
            }
            lifted.isNTT = true
            return lifted
        }
        return ExtendedCiphertext(polys: polys, level: level)
    }

    /// Q → Q·B: appends rows for B holding the centered representative of each coefficient
    /// (the arithmetic is `netext_he_lift`).
    func liftToAuxiliary(_ poly: RNSPolynomial) -> RNSPolynomial {
        precondition(!poly.isNTT)
        let level = poly.moduliCount
        let constants = multiplication[level - 1]
        let n = degree, k = auxiliaryModuli.count
        var out = RNSPolynomial(degree: n, moduliCount: level + k, isNTT: false)
        out.storage.replaceSubrange(0..<(level * n), with: poly.storage)
        let q = moduli.prefix(level).map(\.value)
        let y = levels[level - 1].crtInverse
        let ys = zip(moduli.prefix(level), y).map { $0.shoup($1) }
        let b = auxiliaryModuli.map(\.value)
        let wide = auxiliaryModuli.map(\.wideReductionConstants)
        let (bc, bcs, br) = (wide.map(\.c), wide.map(\.cShoup), wide.map(\.r))
        let qHat = constants.qHatModB.flatMap { $0 }
        var terms = [UInt32](repeating: 0, count: level * n)
        var fraction = [Double](repeating: 0, count: n)
        var sums = [UInt64](repeating: 0, count: n)
        out.storage.withUnsafeMutableBufferPointer { rows in
            netext_he_lift(
                rows.baseAddress!, rows.baseAddress! + level * n, n, level, k, q, y, ys, constants.inverseQ,
                b, bc, bcs, br, qHat, constants.qModB, &terms, &fraction, &sums)
        }
        return out
    }

    /// An empty accumulator for products at `level`.
    public func makeProductAccumulator(level: Int) -> ProductAccumulator {
        let poly = RNSPolynomial(degree: degree, moduliCount: level + auxiliaryModuli.count, isNTT: true)
        return ProductAccumulator(polys: [poly, poly, poly], level: level)
    }

    /// accumulator += a ⊗ b = (a_0·b_0, a_0·b_1 + a_1·b_0, a_1·b_1).
    public func accumulateProduct(
        _ a: ExtendedCiphertext, _ b: ExtendedCiphertext, into accumulator: inout ProductAccumulator
    ) throws(HomomorphicEncryptionError) {
        guard a.level == b.level else { throw .levelMismatch(left: a.level, right: b.level) }
        guard a.level == accumulator.level else { throw .levelMismatch(left: a.level, right: accumulator.level) }
        guard accumulator.count < BFVContext.maximumAccumulatedProducts else {
            throw .invalidParameters("an accumulator holds at most \(BFVContext.maximumAccumulatedProducts) products")
        }
        let all = extendedModuli(level: a.level)
        accumulator.polys[0].multiplyAdd(a.polys[0], b.polys[0], moduli: all)
        accumulator.polys[1].multiplyAdd(a.polys[0], b.polys[1], moduli: all)
        accumulator.polys[1].multiplyAdd(a.polys[1], b.polys[0], moduli: all)
        accumulator.polys[2].multiplyAdd(a.polys[1], b.polys[1], moduli: all)
        accumulator.noteProduct()
    }

    /// Scales the accumulated tensor by t/Q with rounding: a three-polynomial ciphertext over
    /// Q (NTT form) to relinearize.
    public func finish(_ accumulator: ProductAccumulator) -> Ciphertext {
        let level = accumulator.level
        let allTransforms = extendedTransforms(level: level)
        let polys = accumulator.polys.map { poly -> RNSPolynomial in
            var coefficients = poly
            coefficients.inverseNTT(allTransforms)
            var scaled = scaleToCiphertextModulus(coefficients, level: level)
            scaled.forwardNTT(transforms)
            return scaled
        }
        return Ciphertext(polys: polys)
    }

    /// Q·B → Q: round(t·x/Q) computed in B, then converted (centered) back to Q.
    func scaleToCiphertextModulus(_ poly: RNSPolynomial, level: Int) -> RNSPolynomial {
        let constants = multiplication[level - 1]
        let n = degree, k = auxiliaryModuli.count
        var out = RNSPolynomial(degree: n, moduliCount: level, isNTT: false)
        // Step 1: rounded[j] = round(Σ_i x_i·θ_i).
        var rounded = [UInt64](repeating: 0, count: n)
        // Step 2: inB[a·n + j] = [d_a·z_a]_{b_a} with d = round(t·x/Q) mod b_a; overflow = round(Σ_a inB/b_a).
        var inB = [UInt32](repeating: 0, count: k * n)
        var overflow = [UInt64](repeating: 0, count: n)
        poly.storage.withUnsafeBufferPointer { rows in
            rounded.withUnsafeMutableBufferPointer { rounded in
                var fraction = [Double](repeating: 0.5, count: n)
                for i in 0..<level {
                    let theta = constants.theta[i]
                    for j in 0..<n { fraction[j] += Double(rows[i &* n &+ j]) * theta }
                }
                for j in 0..<n { rounded[j] = UInt64(fraction[j]) }
            }
            inB.withUnsafeMutableBufferPointer { inB in
                var vFraction = [Double](repeating: 0.5, count: n)
                var sums = [UInt64](repeating: 0, count: n)
                for a in 0..<k {
                    let b = auxiliaryModuli[a]
                    for j in 0..<n { sums[j] = rounded[j] }
                    for i in 0..<level {
                        let omega = UInt64(constants.omegaModB[a][i])
                        for j in 0..<n { sums[j] &+= UInt64(rows[i &* n &+ j]) &* omega }
                    }
                    let tOverQ = constants.tOverQModB[a], tOverQShoup = b.shoup(tOverQ)
                    let z = constants.bHatInverse[a], zShoup = b.shoup(z)
                    let inverse = constants.inverseB[a]
                    let own = (level &+ a) &* n
                    for j in 0..<n {
                        let d = b.add(b.reduce(sums[j]), b.multiplyShoup(rows[own &+ j], tOverQ, tOverQShoup))
                        let term = b.multiplyShoup(d, z, zShoup)
                        inB[a &* n &+ j] = term
                        vFraction[j] += Double(term) * inverse
                    }
                }
                for j in 0..<n { overflow[j] = UInt64(vFraction[j]) }
            }
        }
        // Step 3: centered B → Q.
        inB.withUnsafeBufferPointer { inB in
            out.storage.withUnsafeMutableBufferPointer { result in
                var sums = [UInt64](repeating: 0, count: n)
                for i in 0..<level {
                    let q = moduli[i]
                    for j in 0..<n { sums[j] = 0 }
                    for a in 0..<k {
                        let factor = UInt64(constants.bHatModQ[i][a])
                        for j in 0..<n { sums[j] &+= UInt64(inB[a &* n &+ j]) &* factor }
                    }
                    let bModQ = UInt64(constants.bModQ[i])
                    for j in 0..<n {
                        result[i &* n &+ j] = q.subtract(q.reduce(sums[j]), q.reduce(overflow[j] &* bModQ))
                    }
                }
            }
        }
        return out
    }

    /// `a · b` as a three-polynomial ciphertext (relinearize it to get two back).
    public func multiply(_ a: Ciphertext, _ b: Ciphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard a.level == b.level else { throw .levelMismatch(left: a.level, right: b.level) }
        var accumulator = makeProductAccumulator(level: a.level)
        try accumulateProduct(extendForMultiplication(a), extendForMultiplication(b), into: &accumulator)
        return finish(accumulator)
    }
}
