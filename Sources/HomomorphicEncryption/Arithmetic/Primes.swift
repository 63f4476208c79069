/// Prime tests and the search for NTT-friendly primes (`q ≡ 1 mod 2N`).
public enum Primes {
    /// Deterministic primality for 32-bit values (Miller–Rabin with bases 2, 7, 61, which
    /// are exact below 4,759,123,141).
    public static func isPrime(_ n: UInt32) -> Bool {
        if n < 2 { return false }
        for p: UInt32 in [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
            if n == p { return true }
            if n % p == 0 { return false }
        }
        var d = UInt64(n - 1)
        var s = 0
        while d & 1 == 0 { d >>= 1; s += 1 }
        let m = UInt64(n)
        func powMod(_ b: UInt64, _ e: UInt64) -> UInt64 {
            var r: UInt64 = 1, b = b % m, e = e
            while e > 0 {
                if e & 1 == 1 { r = r * b % m }
                b = b * b % m
                e >>= 1
            }
            return r
        }
        witness: for a: UInt64 in [2, 7, 61] {
            if a % m == 0 { continue }
            var x = powMod(a, d)
            if x == 1 || x == m - 1 { continue }
            for _ in 1..<max(s, 1) {
                x = x * x % m
                if x == m - 1 { continue witness }
            }
            return false
        }
        return true
    }

    /// The `count` largest primes of exactly `bits` bits with `q ≡ 1 (mod 2·degree)`, largest
    /// first, skipping any in `excluding`.
    public static func nttFriendly(
        bits: Int, degree: Int, count: Int, excluding: Set<UInt32> = []
    ) throws(HomomorphicEncryptionError) -> [UInt32] {
        guard bits >= 2, bits <= 30, degree.nonzeroBitCount == 1 else {
            throw .invalidParameters("prime size \(bits) bits (2–30) or degree \(degree) (a power of two)")
        }
        let step = UInt64(2 * degree)
        let upper = UInt64(1) << UInt64(bits)
        let lower = UInt64(1) << UInt64(bits - 1)
        var candidate = (upper - 1) / step * step + 1
        if candidate >= upper { candidate -= step }
        var found: [UInt32] = []
        while found.count < count {
            guard candidate > lower else { throw .noNTTFriendlyPrime(bits: bits, degree: degree) }
            let c = UInt32(candidate)
            if !excluding.contains(c), isPrime(c) { found.append(c) }
            candidate -= step
        }
        return found
    }

    /// The smallest primitive `order`-th root of unity modulo prime `q` (`order` a power of two
    /// dividing `q − 1`), so every build picks the same one.
    public static func minimalPrimitiveRoot(order: Int, modulus q: Modulus) throws(HomomorphicEncryptionError) -> UInt32 {
        let qm1 = UInt64(q.value - 1)
        guard order.nonzeroBitCount == 1, order >= 2, qm1 % UInt64(order) == 0 else {
            throw .invalidParameters("\(q.value) has no primitive \(order)-th root of unity")
        }
        var generator: UInt32 = 2
        var root: UInt32 = 0
        while generator < q.value {
            let r = q.power(generator, qm1 / UInt64(order))
            if q.power(r, UInt64(order / 2)) == q.value - 1 { root = r; break }
            generator += 1
        }
        guard root != 0 else { throw .invalidParameters("no primitive root found modulo \(q.value)") }
        // All primitive order-th roots are root^k for odd k; take the smallest.
        let square = q.multiply(root, root)
        var current = root
        var smallest = root
        for _ in 0..<(order / 2) {
            smallest = min(smallest, current)
            current = q.multiply(current, square)
        }
        return smallest
    }
}
