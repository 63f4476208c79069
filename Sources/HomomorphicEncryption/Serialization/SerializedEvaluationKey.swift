/// An evaluation key as bytes: each key-switching key is a list of seeded "ciphertexts"
/// (b_i over every key prime as NTT evaluations, and the seed of a_i, whose expansion is also
/// read as evaluations), one per ciphertext prime — the layout of Apple's `KeySwitchKey`, whose
/// ciphertexts are in `Eval` form.
public struct SerializedEvaluationKey: Sendable, Equatable {
    public var galoisKeys: [Int: [SerializedCiphertext]]
    public var relinearizationKey: [SerializedCiphertext]?

    public init(galoisKeys: [Int: [SerializedCiphertext]], relinearizationKey: [SerializedCiphertext]?) {
        self.galoisKeys = galoisKeys
        self.relinearizationKey = relinearizationKey
    }

    public var byteCount: Int {
        galoisKeys.values.reduce(0) { $0 + $1.reduce(0) { $0 + $1.byteCount } }
            + (relinearizationKey?.reduce(0) { $0 + $1.byteCount } ?? 0)
    }
}

extension BFVContext {
    public func serialize(_ key: EvaluationKey) -> SerializedEvaluationKey {
        func encode(_ k: KeySwitchingKey) -> [SerializedCiphertext] {
            zip(k.b, k.seeds).map { b, seed in
                precondition(b.isNTT)
                return .seeded(poly0: PolynomialCoding.encode(b, moduli: moduli), seed: seed)
            }
        }
        return SerializedEvaluationKey(
            galoisKeys: key.galoisKeys.mapValues(encode), relinearizationKey: key.relinearizationKey.map(encode))
    }

    public func deserialize(_ serialized: SerializedEvaluationKey) throws(HomomorphicEncryptionError) -> EvaluationKey {
        func decode(_ parts: [SerializedCiphertext], _ what: String) throws(HomomorphicEncryptionError) -> KeySwitchingKey {
            guard parts.count == maximumLevel else {
                throw .malformed("\(what) has \(parts.count) parts, expected \(maximumLevel)")
            }
            var bs: [RNSPolynomial] = [], seeds: [[UInt8]] = []
            for (i, part) in parts.enumerated() {
                guard case let .seeded(poly0, seed) = part, seed.count == SeedStream.seedByteCount else {
                    throw .malformed("\(what) part \(i) must be seeded with a 32-byte seed")
                }
                let b = try PolynomialCoding.decode(poly0, degree: degree, moduli: moduli, isNTT: true, what: "\(what) part \(i)")
                bs.append(b)
                seeds.append(seed)
            }
            return expandKeySwitchingKey(seeds: seeds, b: bs)
        }
        var key = EvaluationKey()
        for (element, parts) in serialized.galoisKeys {
            try validateGaloisElement(element)
            key.galoisKeys[element] = try decode(parts, "Galois key \(element)")
        }
        if let relin = serialized.relinearizationKey { key.relinearizationKey = try decode(relin, "relinearization key") }
        return key
    }
}
