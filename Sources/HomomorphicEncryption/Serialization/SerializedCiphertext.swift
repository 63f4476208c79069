#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ciphertext as bytes, in the two shapes of the PIR protocol (`docs/pir-protocol.md`).
public enum SerializedCiphertext: Sendable, Equatable {
    /// c_0 in full and the 32-byte seed c_1 expands from (fresh secret-key encryptions).
    case seeded(poly0: [UInt8], seed: [UInt8])
    /// A 2-byte little-endian polynomial count, then every polynomial (coefficient form);
    /// `skipLSBs[k]` low bits dropped from each coefficient of polynomial k — only for
    /// ciphertexts that are decrypted next. (Apple's `Serialize.serializePolys` layout.)
    case full(polys: [UInt8], skipLSBs: [UInt32])

    /// Size on the wire, without protobuf framing.
    public var byteCount: Int {
        switch self {
        case let .seeded(poly0, seed): poly0.count + seed.count
        case let .full(polys, _): polys.count
        }
    }
}

extension BFVContext {
    /// Serializes a ciphertext: seeded when it still has its seed, else full; with
    /// `forDecryption` the low bits that cannot change the decrypted value are dropped.
    public func serialize(_ ciphertext: Ciphertext, forDecryption: Bool = false) -> SerializedCiphertext {
        var polys = ciphertext.polys
        for k in polys.indices { convert(&polys[k], toNTT: false) }
        let list = ciphertextModuli(level: ciphertext.level)
        if let seed = ciphertext.seed, polys.count == 2, !forDecryption {
            return .seeded(poly0: PolynomialCoding.encode(polys[0], moduli: list), seed: seed)
        }
        let skips = forDecryption ? decryptionSkips(level: ciphertext.level, count: polys.count) : Array(repeating: 0, count: polys.count)
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: polys.count), UInt8(truncatingIfNeeded: polys.count >> 8)]
        for (k, poly) in polys.enumerated() { bytes += PolynomialCoding.encode(poly, moduli: list, skip: skips[k]) }
        return .full(polys: bytes, skipLSBs: skips.map(UInt32.init))
    }

    /// Low bits that can be dropped from a two-polynomial ciphertext about to be decrypted (one
    /// prime only), chosen as Apple's library chooses them (`skipLSBsForDecryption`, after
    /// Section 5.2 and Appendix F of ePrint 2022/207) so both produce the same bytes.
    /// Decryption succeeds while the total error stays below Δ/2 (Δ = q/t). Dropping k_0 bits of
    /// c_0 adds less than 2^k_0 with k_0 = ⌊log2 ⌊q/t⌋⌋ − 3 (below Δ/8); dropping k_1 bits of c_1
    /// adds δ·s, δ_i ∈ [0, 2^k_1), a sum of ≈ 2N/3 signed terms, which k_1 = k_0 − ⌈log2 ⌊8·√(2N/9)⌋⌉
    /// keeps below Δ/8 out to 8σ. When k_1 would be at most 1, c_0 drops one bit more and c_1 none.
    /// N = 4096, t = 17, q ≈ 2^27: k_0 = 20, k_1 = 12, so 7 + 15 bits per coefficient pair
    /// instead of 54.
    func decryptionSkips(level: Int, count: Int) -> [Int] {
        guard level == 1, count == 2 else { return Array(repeating: 0, count: count) }
        let quotient = moduli[0].value / plaintextModulus.value
        guard quotient >= 2 else { return [0, 0] }
        let lPrime = (31 - quotient.leadingZeroBitCount) - 3  // ⌊log2 ⌊q/t⌋⌋ − 3
        let spread = Int(8 * (2 * Double(degree) / 9).squareRoot())
        let spreadBits = spread <= 1 ? 0 : Int.bitWidth - (spread - 1).leadingZeroBitCount  // ⌈log2 spread⌉
        let second = lPrime - spreadBits
        if second <= 1 { return [max(lPrime + 1, 0), 0] }
        return [max(lPrime, 0), second]
    }

    /// Reads a ciphertext; the level is inferred from the byte count (one of the levels of
    /// this parameter set must match exactly).
    public func deserialize(_ serialized: SerializedCiphertext) throws(HomomorphicEncryptionError) -> Ciphertext {
        switch serialized {
        case let .seeded(poly0, seed):
            guard seed.count == SeedStream.seedByteCount else {
                throw .malformed("ciphertext seed has \(seed.count) bytes, expected \(SeedStream.seedByteCount)")
            }
            let level = try inferLevel(byteCount: poly0.count, polynomials: 1, skips: [0])
            var c0 = try PolynomialCoding.decode(poly0, degree: degree, moduli: ciphertextModuli(level: level), what: "seeded ciphertext")
            c0.forwardNTT(transforms)
            return Ciphertext(polys: [c0, expandSeededPolynomial(seed: seed, level: level)], seed: seed)
        case let .full(bytes, skipLSBs):
            guard (2...3).contains(skipLSBs.count) else {
                throw .malformed("full ciphertext lists \(skipLSBs.count) polynomials, expected 2 or 3")
            }
            let skips = skipLSBs.map { Int($0) }
            guard skips.allSatisfy({ $0 < 30 }) else { throw .malformed("skipped bits \(skipLSBs) exceed the prime size") }
            guard bytes.count >= 2 else { throw .malformed("full ciphertext of \(bytes.count) bytes lacks its 2-byte polynomial count") }
            let count = Int(bytes[bytes.startIndex]) | Int(bytes[bytes.startIndex + 1]) << 8
            guard count == skips.count else {
                throw .malformed("full ciphertext says \(count) polynomials at offset 0 but lists \(skips.count) skip counts")
            }
            let level = try inferLevel(byteCount: bytes.count - 2, polynomials: skips.count, skips: skips)
            let list = ciphertextModuli(level: level)
            var polys: [RNSPolynomial] = []
            var offset = bytes.startIndex + 2
            for (k, skip) in skips.enumerated() {
                let size = PolynomialCoding.byteCount(degree: degree, moduli: list, skip: skip)
                var poly = try PolynomialCoding.decode(bytes[offset..<(offset + size)], degree: degree, moduli: list, skip: skip, what: "ciphertext polynomial \(k)")
                poly.forwardNTT(transforms)
                polys.append(poly)
                offset += size
            }
            return Ciphertext(polys: polys)
        }
    }

    private func inferLevel(byteCount: Int, polynomials: Int, skips: [Int]) throws(HomomorphicEncryptionError) -> Int {
        for level in stride(from: maximumLevel, through: 1, by: -1) {
            let list = ciphertextModuli(level: level)
            let size = skips.reduce(0) { $0 + PolynomialCoding.byteCount(degree: degree, moduli: list, skip: $1) }
            if size == byteCount { return level }
        }
        throw .malformed("\(byteCount) bytes match no level of \(parameters.name) for \(polynomials) polynomial(s)")
    }
}
