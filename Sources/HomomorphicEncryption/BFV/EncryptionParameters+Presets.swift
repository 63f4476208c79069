extension EncryptionParameters {
    /// N = 4096, t = 17, Q = 134176769 · 268369921, P = 268361729 (≈ 2^83 in all): post-quantum
    /// 128-bit. The same primes as Apple's `n_4096_logq_27_28_28_logt_5`, the URL filter's PIR
    /// parameters (`../shared/bench/pir-anchor.md`).
    public static var n4096LogQ27_28_28LogT5: EncryptionParameters {
        try! EncryptionParameters(
            name: "n_4096_logq_27_28_28_logt_5", polyDegree: 4096, plaintextModulus: 17,
            coefficientModuli: [134_176_769, 268_369_921], specialModulus: 268_361_729,
            securityLevel: .quantum128)
    }

    /// N = 8192, t = 65537 (SIMD slots), five 30-bit ciphertext primes and a 30-bit special
    /// prime (≈ 2^180): post-quantum 128-bit, depth for a few multiplications.
    public static var n8192LogQ6x30LogT17: EncryptionParameters {
        let primes = try! Primes.nttFriendly(bits: 30, degree: 8192, count: 6)
        return try! EncryptionParameters(
            name: "n_8192_logq_6x30_logt_17", polyDegree: 8192, plaintextModulus: 65537,
            coefficientModuli: Array(primes.dropLast()), specialModulus: primes.last!,
            securityLevel: .quantum128)
    }

    /// INSECURE, for tests: N = 64, t = 257 (SIMD-capable), three 28-bit primes plus special.
    public static var insecureN64: EncryptionParameters {
        let primes = try! Primes.nttFriendly(bits: 28, degree: 64, count: 4)
        return try! EncryptionParameters(
            name: "insecure_n_64_logq_3x28_logt_9", polyDegree: 64, plaintextModulus: 257,
            coefficientModuli: Array(primes.dropLast()), specialModulus: primes.last!,
            securityLevel: .unchecked)
    }

    /// INSECURE, for tests: N = 256 with the PIR parameters' plaintext modulus t = 17 and two
    /// ciphertext primes, the shape of the real PIR set at a size debug builds run quickly.
    public static var insecureN256T17: EncryptionParameters {
        let primes = try! Primes.nttFriendly(bits: 28, degree: 256, count: 3)
        return try! EncryptionParameters(
            name: "insecure_n_256_logq_28_28_28_logt_5", polyDegree: 256, plaintextModulus: 17,
            coefficientModuli: Array(primes.dropLast()), specialModulus: primes.last!,
            securityLevel: .unchecked)
    }
}
