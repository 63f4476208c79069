/// Everything that can go wrong in the homomorphic-encryption library; each case names the
/// value at fault and what was expected.
public enum HomomorphicEncryptionError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidModulus(value: UInt64, reason: String)
    case notInvertible(value: UInt64, modulus: UInt64)
    case invalidParameters(String)
    case noNTTFriendlyPrime(bits: Int, degree: Int)
    case plaintextOutOfRange(index: Int, value: UInt64, plaintextModulus: UInt64)
    case wrongCoefficientCount(got: Int, expected: Int)
    case levelMismatch(left: Int, right: Int)
    case cannotSwitchModulus(level: Int)
    case missingGaloisKey(element: Int)
    case missingRelinearizationKey
    case invalidGaloisElement(element: Int, degree: Int)
    case wrongPolynomialCount(got: Int, expected: Int)
    case unsupportedEncoding(String)
    case malformed(String)

    public var description: String {
        switch self {
        case let .invalidModulus(value, reason): "modulus \(value) is invalid: \(reason)"
        case let .notInvertible(value, modulus): "\(value) has no inverse modulo \(modulus)"
        case let .invalidParameters(reason): "invalid encryption parameters: \(reason)"
        case let .noNTTFriendlyPrime(bits, degree):
            "no \(bits)-bit prime q ≡ 1 (mod \(2 * degree)) left to choose"
        case let .plaintextOutOfRange(index, value, t):
            "plaintext value \(value) at index \(index) is not below the plaintext modulus \(t)"
        case let .wrongCoefficientCount(got, expected): "got \(got) values, expected at most \(expected)"
        case let .levelMismatch(left, right):
            "operands are at different levels (\(left) and \(right) moduli); switch the higher one down first"
        case let .cannotSwitchModulus(level): "a ciphertext at \(level) modulus cannot drop another one"
        case let .missingGaloisKey(element): "no Galois key for element \(element)"
        case .missingRelinearizationKey: "no relinearization key"
        case let .invalidGaloisElement(element, degree):
            "Galois element \(element) must be odd and below \(2 * degree)"
        case let .wrongPolynomialCount(got, expected): "ciphertext has \(got) polynomials, expected \(expected)"
        case let .unsupportedEncoding(reason): "encoding unsupported: \(reason)"
        case let .malformed(reason): "malformed input: \(reason)"
        }
    }
}
