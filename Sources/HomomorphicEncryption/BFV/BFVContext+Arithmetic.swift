import CHomomorphicKernels

extension BFVContext {
    /// `a + b`; both at the same level and with the same number of polynomials.
    public func add(_ a: Ciphertext, _ b: Ciphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard a.level == b.level else { throw .levelMismatch(left: a.level, right: b.level) }
        var longer = a.polys.count >= b.polys.count ? a : b
        let shorter = a.polys.count >= b.polys.count ? b : a
        for k in shorter.polys.indices {
            var other = shorter.polys[k]
            if other.isNTT != longer.polys[k].isNTT { convert(&other, toNTT: longer.polys[k].isNTT) }
            longer.polys[k].add(other, moduli: moduli)
        }
        longer.seed = nil
        return longer
    }

    /// `a − b`.
    public func subtract(_ a: Ciphertext, _ b: Ciphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        try add(a, negate(b))
    }

    /// `−a`.
    public func negate(_ a: Ciphertext) -> Ciphertext {
        var out = a
        for k in out.polys.indices { out.polys[k].negate(moduli: moduli) }
        out.seed = nil
        return out
    }

    /// `a + m` for a plaintext m (adds Δ·m to c_0).
    public func add(_ a: Ciphertext, plaintext: Plaintext) -> Ciphertext {
        var out = a
        let wasNTT = out.polys[0].isNTT
        if wasNTT { out.polys[0].inverseNTT(transforms) }
        addScaledMessage(plaintext, to: &out.polys[0])
        if wasNTT { out.polys[0].forwardNTT(transforms) }
        return out
    }

    /// `a · m` for a prepared plaintext at the ciphertext's level (or above); result in NTT form.
    public func multiply(_ a: Ciphertext, plaintext: PreparedPlaintext) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard plaintext.poly.moduliCount >= a.level else {
            throw .levelMismatch(left: a.level, right: plaintext.poly.moduliCount)
        }
        var out = a
        for k in out.polys.indices {
            if !out.polys[k].isNTT { out.polys[k].forwardNTT(transforms) }
            out.polys[k].multiply(plaintext.poly, moduli: moduli)
        }
        out.seed = nil
        return out
    }

    /// Converts every polynomial to NTT (true) or coefficient (false) form.
    public func convert(_ ciphertext: inout Ciphertext, toNTT: Bool) {
        for k in ciphertext.polys.indices { convert(&ciphertext.polys[k], toNTT: toNTT) }
    }

    func convert(_ poly: inout RNSPolynomial, toNTT: Bool) {
        if toNTT, !poly.isNTT { poly.forwardNTT(transforms) }
        if !toNTT, poly.isNTT { poly.inverseNTT(transforms) }
    }

    /// Divides every polynomial by its last prime with rounding and drops that prime: the
    /// plaintext is unchanged, the ciphertext shrinks, and the noise scales down with Q.
    public func modSwitchDown(_ ciphertext: Ciphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard ciphertext.level > 1 else { throw .cannotSwitchModulus(level: ciphertext.level) }
        var out = ciphertext
        let constants = levels[ciphertext.level - 1]
        for k in out.polys.indices {
            divideAndDropLast(&out.polys[k], inverses: constants.lastInverse, half: moduli[ciphertext.level - 1].value / 2)
        }
        out.seed = nil
        return out
    }

    /// poly ← round(poly / q_last) over the remaining primes, where q_last is the polynomial's
    /// last row's prime (a ciphertext prime, or the special prime after key switching).
    /// `inverses[i]` = q_last^−1 mod q_i; `half` = ⌊q_last/2⌋.
    func divideAndDropLast(_ poly: inout RNSPolynomial, inverses: [UInt32], half: UInt32, lastModulusIndex: Int? = nil) {
        let lastRow = poly.moduliCount - 1
        let lastIndex = lastModulusIndex ?? lastRow
        let lastModulus = moduli[lastIndex]
        let n = degree
        var last = Array(poly.row(lastRow))
        if poly.isNTT { last.withUnsafeMutableBufferPointer { transforms[lastIndex].inverse($0) } }
        // round(x / p) = (x − [x]_p) / p with [x]_p centered: shift by ⌊p/2⌋ first.
        for j in 0..<n { last[j] = lastModulus.add(last[j], half) }
        let isNTT = poly.isNTT
        poly.dropLastRow()
        var scratch = [UInt32](repeating: 0, count: n)
        last.withUnsafeBufferPointer { last in
            scratch.withUnsafeMutableBufferPointer { scratch in
                poly.forEachRow { row, i in
                    let q = moduli[i]
                    let halfModQ = half % q.value
                    netext_he_reduce32(scratch.baseAddress!, last.baseAddress!, n, q.value, q.shoup(1))
                    for j in 0..<n { scratch[j] = q.subtract(scratch[j], halfModQ) }
                    if isNTT { transforms[i].forward(scratch) }
                    let inverse = inverses[i]
                    netext_he_subtract_multiply(row.baseAddress!, scratch.baseAddress!, n, q.value, inverse, q.shoup(inverse))
                }
            }
        }
    }
}
