import Foundation
import HomomorphicEncryption

extension SerializedCiphertext {
    public var proto: ProtoSerializedCiphertext {
        var message = ProtoSerializedCiphertext()
        switch self {
        case let .seeded(poly0, seed):
            message.seeded.poly0 = Data(poly0)
            message.seeded.seed = Data(seed)
        case let .full(polys, skipLSBs):
            message.full.polys = Data(polys)
            message.full.skipLsbs = skipLSBs
            message.full.correctionFactor = 1
        }
        return message
    }

    public init(proto message: ProtoSerializedCiphertext) throws(HomomorphicEncryptionError) {
        switch message.serializedCiphertextType {
        case let .seeded(seeded): self = .seeded(poly0: Array(seeded.poly0), seed: Array(seeded.seed))
        case let .full(full):
            guard full.correctionFactor <= 1 else {
                throw .malformed("correction factor \(full.correctionFactor) (BFV uses 1)")
            }
            self = .full(polys: Array(full.polys), skipLSBs: full.skipLsbs)
        case nil: throw .malformed("ciphertext has neither seeded nor full form")
        }
    }
}

extension SerializedEvaluationKey {
    public var proto: ProtoSerializedEvaluationKey {
        var message = ProtoSerializedEvaluationKey()
        for (element, parts) in galoisKeys {
            var key = Apple_SwiftHomomorphicEncryption_V1_SerializedKeySwitchKey()
            key.keySwitchKey.ciphertexts = parts.map(\.proto)
            message.galoisKey.keySwitchKeys[UInt64(element)] = key
        }
        if let relinearizationKey {
            message.relinKey.relinKey.keySwitchKey.ciphertexts = relinearizationKey.map(\.proto)
        }
        return message
    }

    public init(proto message: ProtoSerializedEvaluationKey) throws(HomomorphicEncryptionError) {
        var galois: [Int: [SerializedCiphertext]] = [:]
        for (element, key) in message.galoisKey.keySwitchKeys {
            guard element < 1 << 20 else { throw .malformed("Galois element \(element)") }
            var parts: [SerializedCiphertext] = []
            for part in key.keySwitchKey.ciphertexts { parts.append(try SerializedCiphertext(proto: part)) }
            galois[Int(element)] = parts
        }
        var relin: [SerializedCiphertext]?
        if message.hasRelinKey {
            var parts: [SerializedCiphertext] = []
            for part in message.relinKey.relinKey.keySwitchKey.ciphertexts { parts.append(try SerializedCiphertext(proto: part)) }
            relin = parts
        }
        self.init(galoisKeys: galois, relinearizationKey: relin)
    }
}
