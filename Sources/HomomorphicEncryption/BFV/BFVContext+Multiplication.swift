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
        let allTransforms = extendedTransforms(level: level)
        let polys = ciphertext.polys.map { poly -> RNSPolynomial in
            var coefficients = poly
            convert(&coefficients, toNTT: false)
            var lifted = liftToAuxiliary(coefficients)
            lifted.forwardNTT(allTransforms)
            return lifted
        }
        return ExtendedCiphertext(polys: polys, level: level)
    }

    /// Q → Q·B: appends rows for B holding the centered representative of each coefficient.
    func liftToAuxiliary(_ poly: RNSPolynomial) -> RNSPolynomial {
        precondition(!poly.isNTT)
        let level = poly.moduliCount
        let constants = multiplication[level - 1]
        let crt = levels[level - 1].crtInverse
        let n = degree, k = auxiliaryModuli.count
        var out = RNSPolynomial(degree: n, moduliCount: level + k, isNTT: false)
        out.storage.replaceSubrange(0..<(level * n), with: poly.storage)
        var terms = [UInt32](repeating: 0, count: level)
        out.storage.withUnsafeMutableBufferPointer { rows in
            for j in 0..<n {
                var v = 0.0
                for i in 0..<level {
                    let term = moduli[i].multiply(rows[i * n + j], crt[i])
                    terms[i] = term
                    v += Double(term) * constants.inverseQ[i]
                }
                let overflow = UInt64(v.rounded())
                for a in 0..<k {
                    let b = auxiliaryModuli[a]
                    var sum: UInt64 = 0
                    for i in 0..<level { sum &+= UInt64(terms[i]) &* UInt64(constants.qHatModB[a][i]) }
                    let positive = b.reduce(sum)
                    let negative = b.reduce(overflow &* UInt64(constants.qModB[a]))
                    rows[(level + a) * n + j] = b.subtract(positive, negative)
                }
            }
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
        var inB = [UInt32](repeating: 0, count: k)
        poly.storage.withUnsafeBufferPointer { rows in
            out.storage.withUnsafeMutableBufferPointer { result in
                for j in 0..<n {
                    var fraction = 0.0
                    for i in 0..<level { fraction += Double(rows[i * n + j]) * constants.theta[i] }
                    let rounded = UInt64(fraction.rounded())
                    // round(t·x/Q) mod b_a
                    var v = 0.0
                    for a in 0..<k {
                        let b = auxiliaryModuli[a]
                        var sum: UInt64 = rounded
                        for i in 0..<level { sum &+= UInt64(rows[i * n + j]) &* UInt64(constants.omegaModB[a][i]) }
                        let own = b.multiply(rows[(level + a) * n + j], constants.tOverQModB[a])
                        let d = b.add(b.reduce(sum), own)
                        let term = b.multiply(d, constants.bHatInverse[a])
                        inB[a] = term
                        v += Double(term) * constants.inverseB[a]
                    }
                    // centered B → Q
                    let overflow = UInt64(v.rounded())
                    for i in 0..<level {
                        let q = moduli[i]
                        var sum: UInt64 = 0
                        for a in 0..<k { sum &+= UInt64(inB[a]) &* UInt64(constants.bHatModQ[i][a]) }
                        result[i * n + j] = q.subtract(q.reduce(sum), q.reduce(overflow &* UInt64(constants.bModQ[i])))
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
