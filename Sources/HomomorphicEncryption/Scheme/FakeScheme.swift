/// INSECURE: a scheme whose "ciphertexts" are the plaintexts themselves, for fast tests of
/// protocols generic over ``HeScheme``. Arithmetic is exact in Z_t[X]/(X^N + 1); there is no
/// noise and no key.
public struct FakeScheme: HeScheme {
    public struct Ciphertext: Sendable, Equatable {
        public var coefficients: [UInt64]
        public var level: Int
    }

    public let degree: Int
    public let plaintextModulusValue: UInt32
    public let maximumLevel: Int

    public init(degree: Int, plaintextModulus: UInt32, levels: Int = 2) {
        self.degree = degree
        self.plaintextModulusValue = plaintextModulus
        self.maximumLevel = levels
    }

    var t: UInt64 { UInt64(plaintextModulusValue) }

    public func generateSecretKey() {}

    public func generateEvaluationKey(galoisElements: [Int], relinearization: Bool, secretKey: Void) -> Set<Int> {
        Set(galoisElements)
    }

    public func encrypt(coefficients: [UInt64], secretKey: Void) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard coefficients.count <= degree else { throw .wrongCoefficientCount(got: coefficients.count, expected: degree) }
        for (i, v) in coefficients.enumerated() where v >= t {
            throw .plaintextOutOfRange(index: i, value: v, plaintextModulus: t)
        }
        return Ciphertext(coefficients: coefficients + [UInt64](repeating: 0, count: degree - coefficients.count), level: maximumLevel)
    }

    public func decryptCoefficients(_ ciphertext: Ciphertext, secretKey: Void) -> [UInt64] { ciphertext.coefficients }

    public func noiseBudget(_ ciphertext: Ciphertext, secretKey: Void) -> Int { Int.max }

    public func preparePlaintext(coefficients: [UInt64]) throws(HomomorphicEncryptionError) -> [UInt64] {
        try encrypt(coefficients: coefficients, secretKey: ()).coefficients
    }

    public func add(_ a: Ciphertext, _ b: Ciphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard a.level == b.level else { throw .levelMismatch(left: a.level, right: b.level) }
        return Ciphertext(coefficients: zip(a.coefficients, b.coefficients).map { ($0 + $1) % t }, level: a.level)
    }

    public func subtract(_ a: Ciphertext, _ b: Ciphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard a.level == b.level else { throw .levelMismatch(left: a.level, right: b.level) }
        return Ciphertext(coefficients: zip(a.coefficients, b.coefficients).map { ($0 + t - $1) % t }, level: a.level)
    }

    public func multiplyByMonomial(_ a: Ciphertext, power: Int) -> Ciphertext {
        let twoN = 2 * degree
        let p = ((power % twoN) + twoN) % twoN
        var out = [UInt64](repeating: 0, count: degree)
        for (i, v) in a.coefficients.enumerated() {
            let target = (i + p) % twoN
            if target < degree { out[target] = v } else { out[target - degree] = (t - v) % t }
        }
        return Ciphertext(coefficients: out, level: a.level)
    }

    public func applyGalois(_ a: Ciphertext, element: Int, key: Set<Int>) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard element > 0, element < 2 * degree, element & 1 == 1 else {
            throw .invalidGaloisElement(element: element, degree: degree)
        }
        guard key.contains(element) else { throw .missingGaloisKey(element: element) }
        var out = [UInt64](repeating: 0, count: degree)
        for (i, v) in a.coefficients.enumerated() {
            let target = (i * element) % (2 * degree)
            if target < degree { out[target] = v } else { out[target - degree] = (t - v) % t }
        }
        return Ciphertext(coefficients: out, level: a.level)
    }

    /// Negacyclic product in Z_t[X]/(X^N + 1), skipping zero coefficients of `a`.
    func product(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        var out = [UInt64](repeating: 0, count: degree)
        for i in 0..<degree where a[i] != 0 {
            for j in 0..<degree where b[j] != 0 {
                let p = a[i] * b[j] % t
                let k = i + j
                if k < degree { out[k] = (out[k] + p) % t } else { out[k - degree] = (out[k - degree] + t - p) % t }
            }
        }
        return out
    }

    public func dotProduct(_ plaintexts: [[UInt64]?], _ ciphertexts: [Ciphertext]) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard plaintexts.count == ciphertexts.count, let first = ciphertexts.first else {
            throw .invalidParameters("dot product of \(plaintexts.count) plaintexts and \(ciphertexts.count) ciphertexts")
        }
        var sum = Ciphertext(coefficients: [UInt64](repeating: 0, count: degree), level: first.level)
        for (p, c) in zip(plaintexts, ciphertexts) {
            guard let p else { continue }
            sum = try add(sum, Ciphertext(coefficients: product(c.coefficients, p), level: c.level))
        }
        return sum
    }

    public func dotProduct(_ a: [Ciphertext], _ b: [Ciphertext], key: Set<Int>) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard a.count == b.count, let first = a.first else {
            throw .invalidParameters("dot product of \(a.count) and \(b.count) ciphertexts")
        }
        var sum = Ciphertext(coefficients: [UInt64](repeating: 0, count: degree), level: first.level)
        for (x, y) in zip(a, b) {
            sum = try add(sum, Ciphertext(coefficients: product(x.coefficients, y.coefficients), level: x.level))
        }
        return sum
    }

    public func modSwitchDown(_ a: Ciphertext, toLevel level: Int) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard level >= 1, level <= a.level else { throw .cannotSwitchModulus(level: a.level) }
        return Ciphertext(coefficients: a.coefficients, level: level)
    }
}
