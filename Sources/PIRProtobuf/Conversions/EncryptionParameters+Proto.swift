import HomomorphicEncryption

extension EncryptionParameters {
    /// The protobuf form: ciphertext primes then the key-switching prime.
    public var proto: ProtoEncryptionParameters {
        var message = ProtoEncryptionParameters()
        message.polynomialDegree = UInt64(polyDegree)
        message.plaintextModulus = UInt64(plaintextModulus)
        message.coefficientModuli = (coefficientModuli + [specialModulus]).map(UInt64.init)
        message.errorStdDev = .stddev32
        message.securityLevel = securityLevel == .quantum128 ? .quantum128 : .unspecified
        message.heScheme = .bfv
        return message
    }

    /// Parameters from their protobuf form: a known set when the numbers match one, otherwise
    /// a new set checked for post-quantum 128-bit security.
    public init(proto message: ProtoEncryptionParameters) throws(HomomorphicEncryptionError) {
        guard message.heScheme == .bfv || message.heScheme == .unspecified else {
            throw .invalidParameters("scheme \(message.heScheme) is not BFV")
        }
        guard message.coefficientModuli.count >= 2, message.coefficientModuli.allSatisfy({ $0 < UInt64(Modulus.limit) }),
              message.plaintextModulus < UInt64(Modulus.limit), message.polynomialDegree <= 32768
        else {
            throw .invalidParameters("degree \(message.polynomialDegree), t \(message.plaintextModulus), primes \(message.coefficientModuli): need ≥ 2 primes below 2^30")
        }
        let primes = message.coefficientModuli.map { UInt32($0) }
        for known in [EncryptionParameters.n4096LogQ27_28_28LogT5, .n8192LogQ6x30LogT17]
        where known.polyDegree == Int(message.polynomialDegree) && known.plaintextModulus == UInt32(message.plaintextModulus)
            && known.coefficientModuli + [known.specialModulus] == primes
        {
            self = known
            return
        }
        let level: SecurityLevel = message.securityLevel == .quantum128 ? .quantum128 : .unchecked
        try self.init(
            name: level == .unchecked ? "insecure_received" : "received", polyDegree: Int(message.polynomialDegree),
            plaintextModulus: UInt32(message.plaintextModulus), coefficientModuli: Array(primes.dropLast()),
            specialModulus: primes.last!, securityLevel: level)
    }
}
