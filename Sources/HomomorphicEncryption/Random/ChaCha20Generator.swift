/// A deterministic random stream from a 32-byte seed: the ChaCha20 block function
/// (RFC 8439 §2.3) with a zero nonce and a counter, as a generator of 32-bit words.
///
/// Seeded from the system's CSPRNG, it draws secrets, errors and key seeds (tests seed it to
/// reproduce a run). Public randomness sent as a seed (the `a` of seeded ciphertexts and keys)
/// is expanded by ``SeedStream`` instead, as Apple's library does.
public struct ChaCha20Generator: RandomNumberGenerator, Sendable {
    private var key: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)
    private var counter: UInt64 = 0
    private var block = [UInt32](repeating: 0, count: 16)
    private var position = 16

    /// Seed length in bytes.
    public static let seedByteCount = 32

    /// A generator expanding `seed` (exactly 32 bytes).
    public init(seed: [UInt8]) {
        precondition(seed.count == ChaCha20Generator.seedByteCount, "ChaCha20 seed must be 32 bytes")
        func word(_ i: Int) -> UInt32 {
            UInt32(seed[4 * i]) | UInt32(seed[4 * i + 1]) << 8 | UInt32(seed[4 * i + 2]) << 16 | UInt32(seed[4 * i + 3]) << 24
        }
        key = (word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7))
    }

    /// A fresh 32-byte seed from the system's CSPRNG (getrandom).
    public static func randomSeed() -> [UInt8] {
        var system = SystemRandomNumberGenerator()
        return (0..<seedByteCount).map { _ in UInt8.random(in: 0...255, using: &system) }
    }

    /// A generator seeded from the system's CSPRNG.
    public static func systemSeeded() -> ChaCha20Generator { ChaCha20Generator(seed: randomSeed()) }

    /// The next 32 random bits.
    public mutating func nextWord() -> UInt32 {
        if position == 16 { refill() }
        let w = block[position]
        position += 1
        return w
    }

    public mutating func next() -> UInt64 {
        UInt64(nextWord()) | UInt64(nextWord()) << 32
    }

    private mutating func refill() {
        // RFC 8439 §2.3: constants, key, 32-bit block counter, 96-bit nonce; we use the 64-bit
        // counter in words 12–13 and zero nonce words 14–15 (the original ChaCha layout).
        var s: [UInt32] = [
            0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574,
            key.0, key.1, key.2, key.3, key.4, key.5, key.6, key.7,
            UInt32(truncatingIfNeeded: counter), UInt32(truncatingIfNeeded: counter >> 32), 0, 0,
        ]
        let initial = s
        @inline(__always) func quarter(_ a: Int, _ b: Int, _ c: Int, _ d: Int) {
            s[a] = s[a] &+ s[b]; s[d] ^= s[a]; s[d] = s[d] << 16 | s[d] >> 16
            s[c] = s[c] &+ s[d]; s[b] ^= s[c]; s[b] = s[b] << 12 | s[b] >> 20
            s[a] = s[a] &+ s[b]; s[d] ^= s[a]; s[d] = s[d] << 8 | s[d] >> 24
            s[c] = s[c] &+ s[d]; s[b] ^= s[c]; s[b] = s[b] << 7 | s[b] >> 25
        }
        for _ in 0..<10 {
            quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15)
            quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14)
        }
        for i in 0..<16 { block[i] = s[i] &+ initial[i] }
        counter &+= 1
        position = 0
    }
}
