extension BFVContext: HeScheme {
    public typealias SecretKeyType = SecretKey
    public typealias EvaluationKeyType = EvaluationKey
    public typealias CiphertextType = Ciphertext
    public typealias PreparedPlaintextType = PreparedPlaintext

    public var plaintextModulusValue: UInt32 { plaintextModulus.value }

    public func encrypt(coefficients: [UInt64], secretKey: SecretKey) throws(HomomorphicEncryptionError) -> Ciphertext {
        encrypt(try encode(coefficients: coefficients), secretKey: secretKey)
    }

    public func decryptCoefficients(_ ciphertext: Ciphertext, secretKey: SecretKey) -> [UInt64] {
        decodeCoefficients(decrypt(ciphertext, secretKey: secretKey))
    }

    public func preparePlaintext(coefficients: [UInt64]) throws(HomomorphicEncryptionError) -> PreparedPlaintext {
        prepare(try encode(coefficients: coefficients))
    }

    public func modSwitchDown(_ a: Ciphertext, toLevel level: Int) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard level >= 1, level <= a.level else { throw .cannotSwitchModulus(level: a.level) }
        var out = a
        while out.level > level { out = try modSwitchDown(out) }
        return out
    }

    public func dotProduct(_ a: [Ciphertext], _ b: [Ciphertext], key: EvaluationKey) throws(HomomorphicEncryptionError) -> Ciphertext {
        guard a.count == b.count, let first = a.first else {
            throw .invalidParameters("dot product of \(a.count) and \(b.count) ciphertexts")
        }
        var accumulator = makeProductAccumulator(level: first.level)
        for (x, y) in zip(a, b) {
            try accumulateProduct(extendForMultiplication(x), extendForMultiplication(y), into: &accumulator)
        }
        return try relinearize(finish(accumulator), key: key)
    }
}
