/// The operations a homomorphic-encryption scheme offers to protocols built on it (PIR).
///
/// Two conformances: ``BFVContext`` (the real scheme) and ``FakeScheme`` (plaintext
/// "ciphertexts", no security, for fast protocol tests). Protocol code is generic over this
/// and the same tests run against both.
public protocol HeScheme: Sendable {
    associatedtype SecretKeyType: Sendable
    associatedtype EvaluationKeyType: Sendable
    associatedtype CiphertextType: Sendable
    associatedtype PreparedPlaintextType: Sendable

    /// Ring degree N (number of coefficients per plaintext).
    var degree: Int { get }
    /// Plaintext modulus t.
    var plaintextModulusValue: UInt32 { get }
    /// How many primes fresh ciphertexts carry.
    var maximumLevel: Int { get }

    func generateSecretKey() -> SecretKeyType
    func generateEvaluationKey(
        galoisElements: [Int], relinearization: Bool, secretKey: SecretKeyType
    ) throws(HomomorphicEncryptionError) -> EvaluationKeyType

    /// Encrypts N (or fewer) coefficients below t.
    func encrypt(coefficients: [UInt64], secretKey: SecretKeyType) throws(HomomorphicEncryptionError) -> CiphertextType
    /// Decrypts to N coefficients.
    func decryptCoefficients(_ ciphertext: CiphertextType, secretKey: SecretKeyType) -> [UInt64]
    /// Remaining noise budget in bits (`Int.max` for schemes without noise).
    func noiseBudget(_ ciphertext: CiphertextType, secretKey: SecretKeyType) -> Int

    /// A plaintext ready for products with ciphertexts (a PIR database entry).
    func preparePlaintext(coefficients: [UInt64]) throws(HomomorphicEncryptionError) -> PreparedPlaintextType

    func add(_ a: CiphertextType, _ b: CiphertextType) throws(HomomorphicEncryptionError) -> CiphertextType
    func subtract(_ a: CiphertextType, _ b: CiphertextType) throws(HomomorphicEncryptionError) -> CiphertextType
    /// Multiplies by X^power (power may be negative; X^N = −1).
    func multiplyByMonomial(_ a: CiphertextType, power: Int) -> CiphertextType
    /// X ↦ X^element under encryption.
    func applyGalois(_ a: CiphertextType, element: Int, key: EvaluationKeyType) throws(HomomorphicEncryptionError) -> CiphertextType
    /// Σ plaintexts[i] · ciphertexts[i], skipping nil plaintexts (missing database rows).
    func dotProduct(
        _ plaintexts: [PreparedPlaintextType?], _ ciphertexts: [CiphertextType]
    ) throws(HomomorphicEncryptionError) -> CiphertextType
    /// Σ a[i] · b[i] over ciphertexts, relinearized.
    func dotProduct(
        _ a: [CiphertextType], _ b: [CiphertextType], key: EvaluationKeyType
    ) throws(HomomorphicEncryptionError) -> CiphertextType
    /// Drops primes (with rounding) until `level` remain.
    func modSwitchDown(_ a: CiphertextType, toLevel level: Int) throws(HomomorphicEncryptionError) -> CiphertextType
}
