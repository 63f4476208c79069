import HomomorphicEncryption
import PIRService
import Testing

/// The evaluation-key store's two bounds: keys and bytes of key material.
@Suite("Evaluation key store bounds")
struct EvaluationKeyStoreTests {
    /// A key of one Galois element over two 1024-coefficient residues: 2 × 2 × 8 KiB + 32 B of seed.
    static func key(_ tag: UInt32) -> EvaluationKey {
        let poly = RNSPolynomial(ntt: [UInt32](repeating: tag, count: 2 * 1024), degree: 1024, moduliCount: 2)
        return EvaluationKey(galoisKeys: [3: KeySwitchingKey(b: [poly], a: [poly], seeds: [[UInt8](repeating: 1, count: 32)])])
    }

    static let keyBytes = 2 * 2 * 1024 * 4 + 32

    @Test("byteCount counts residues and seeds")
    func byteCount() {
        #expect(Self.key(1).byteCount == Self.keyBytes)
    }

    @Test("past the byte budget the least recently used new keys go first, whatever the key capacity")
    func byteBudget() {
        let store = EvaluationKeyStore(capacity: 100, byteBudget: 3 * Self.keyBytes)
        for user in 0..<5 { store.store(Self.key(UInt32(user)), user: "u\(user)", configHash: [1], timestamp: 1) }
        #expect(store.count == 3)
        #expect(store.byteCount == 3 * Self.keyBytes)
        #expect(store.key(user: "u0", configHash: [1]) == nil)
        #expect(store.key(user: "u1", configHash: [1]) == nil)
        #expect(store.key(user: "u4", configHash: [1]) != nil)
    }

    @Test("a key that answered queries survives a flood of uploads that fills the byte budget")
    func protectedUnderBytePressure() {
        let store = EvaluationKeyStore(capacity: 100, byteBudget: 4 * Self.keyBytes)
        store.store(Self.key(9), user: "user", configHash: [1], timestamp: 1)
        store.confirmUse(user: "user", configHash: [1])
        for flood in 0..<50 { store.store(Self.key(UInt32(flood)), user: "flood\(flood)", configHash: [1], timestamp: 1) }
        #expect(store.key(user: "user", configHash: [1]) != nil)
        #expect(store.byteCount <= 4 * Self.keyBytes)
        // Replacing a key does not count it twice.
        store.store(Self.key(10), user: "user", configHash: [1], timestamp: 2)
        #expect(store.byteCount <= 4 * Self.keyBytes)
        #expect(store.timestamp(user: "user", configHash: [1]) == 2)
    }

    @Test("one key larger than the budget is still kept (the store never refuses the only key)")
    func oversizedKey() {
        let store = EvaluationKeyStore(capacity: 10, byteBudget: 100)
        store.store(Self.key(1), user: "u", configHash: [1], timestamp: 1)
        #expect(store.count == 1)
    }
}
