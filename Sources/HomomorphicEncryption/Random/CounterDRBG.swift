import Crypto
import CryptoExtras
import Foundation

/// The deterministic random bit generator that expands public seeds: NIST SP 800-90A Rev. 1
/// §10.2.1 `CTR_DRBG` with AES-128 and no derivation function (seedlen = 256 bits: a 32-byte
/// seed is the whole entropy input; no personalization, no additional input, no reseeding within
/// one expansion).
///
/// Apple's swift-homomorphic-encryption expands the `a` polynomial of seeded ciphertexts and
/// evaluation keys with this generator, drawing it through a 4,096-byte buffer: each refill is one
/// `Generate` call of exactly 4,096 bytes, followed (as §10.2.1.5.1 prescribes) by an `Update` with
/// zero input. The buffering therefore belongs to the output stream, and ``SeedStream`` reproduces
/// it; ``AppleVectorTests`` checks both the NIST CAVP vectors and Apple's polynomial vectors.
struct CounterDRBG {
    /// Seed (entropy input) length: key length + block length.
    static let seedByteCount = 32
    /// Largest single `Generate` request (§10.2.1: max_number_of_bits_per_request = 2^19 bits).
    static let maximumRequest = 1 << 16

    private var key: SymmetricKey
    /// V, the 128-bit counter block, as two big-endian halves.
    private var high: UInt64 = 0
    private var low: UInt64 = 0

    /// `CTR_DRBG_Instantiate` (§10.2.1.3.1): Key = 0, V = 0, then `Update(seed)`.
    init(seed: [UInt8]) {
        precondition(seed.count == CounterDRBG.seedByteCount, "CTR_DRBG seed must be 32 bytes")
        key = SymmetricKey(data: [UInt8](repeating: 0, count: 16))
        update(seed)
    }

    /// The counter block V + 1, where AES-CTR starts (the keystream's first block is E(K, V+1)).
    private var nextCounterBlock: [UInt8] {
        let (newLow, carry) = low.addingReportingOverflow(1)
        let newHigh = high &+ (carry ? 1 : 0)
        return withUnsafeBytes(of: newHigh.bigEndian) { Array($0) } + withUnsafeBytes(of: newLow.bigEndian) { Array($0) }
    }

    private func keystream(_ count: Int) -> Data {
        // swift-crypto's AES-CTR increments the whole 128-bit block (BoringSSL AES_ctr128_encrypt),
        // as CTR_DRBG requires (ctr_len = blocklen).
        // Force-unwraps: the nonce is always 16 bytes and the key always 128 bits.
        let nonce = try! AES._CTR.Nonce(nonceBytes: nextCounterBlock)
        return try! AES._CTR.encrypt(Data(count: count), using: key, nonce: nonce)
    }

    /// `CTR_DRBG_Update` (§10.2.1.2): temp = E(K, V+1) ‖ E(K, V+2); temp ⊕= provided;
    /// Key = leftmost 16 bytes, V = rightmost 16 bytes.
    private mutating func update(_ provided: [UInt8]) {
        var temp = [UInt8](keystream(CounterDRBG.seedByteCount))
        for i in 0..<temp.count { temp[i] ^= provided[i] }
        key = SymmetricKey(data: temp[0..<16])
        high = temp[16..<24].reduce(0) { $0 << 8 | UInt64($1) }
        low = temp[24..<32].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// `CTR_DRBG_Generate` (§10.2.1.5.1) without additional input: `count` bytes of E(K, V+1),
    /// E(K, V+2), …; V advances by the blocks used; then `Update(0^256)`.
    mutating func generate(_ count: Int) -> [UInt8] {
        precondition(count > 0 && count <= CounterDRBG.maximumRequest)
        let output = [UInt8](keystream(count))
        let blocks = UInt64((count + 15) / 16)
        let (newLow, carry) = low.addingReportingOverflow(blocks)
        low = newLow
        high &+= carry ? 1 : 0
        update([UInt8](repeating: 0, count: CounterDRBG.seedByteCount))
        return output
    }
}

/// A seed's byte stream as Apple's library draws it: ``CounterDRBG`` output in 4,096-byte
/// `Generate` calls, handed out in order.
public struct SeedStream {
    /// Seed length in bytes.
    public static let seedByteCount = CounterDRBG.seedByteCount
    static let refillByteCount = 4096

    private var generator: CounterDRBG
    private var buffer: [UInt8] = []
    private var position = 0

    public init(seed: [UInt8]) {
        generator = CounterDRBG(seed: seed)
    }

    /// The next `count` bytes of the stream.
    public mutating func next(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            if position == buffer.count {
                buffer = generator.generate(SeedStream.refillByteCount)
                position = 0
            }
            let take = min(count - out.count, buffer.count - position)
            out += buffer[position..<(position + take)]
            position += take
        }
        return out
    }

    /// A fresh 32-byte seed from the system's CSPRNG (getrandom).
    public static func randomSeed() -> [UInt8] {
        var system = SystemRandomNumberGenerator()
        return (0..<seedByteCount).map { _ in UInt8.random(in: 0...255, using: &system) }
    }
}
