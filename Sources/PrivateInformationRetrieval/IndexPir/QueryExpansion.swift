import HomomorphicEncryption

/// Oblivious query expansion (Angel et al., "PIR with Compressed Queries and Amortized Query
/// Processing", IEEE S&P 2018, Algorithm 3): one ciphertext encrypting Σ a_k X^k (k < 2^ℓ)
/// becomes 2^ℓ ciphertexts encrypting the constants 2^ℓ·a_k, using the Galois elements
/// N/2^j + 1 (X^(2^j·m) ↦ (−1)^m X^(2^j·m)) to split even and odd positions at each level.
/// Nodes whose odd half holds only unused (zero) selectors are doubled instead of split, which
/// saves a quarter of the automorphisms when the selector count is not a power of two.
enum QueryExpansion {
    static func expand<Scheme: HeScheme>(
        _ ciphertext: Scheme.CiphertextType, outputCount: Int, levels: Int,
        key: Scheme.EvaluationKeyType, scheme: Scheme, threads: Int = 1
    ) throws(PirError) -> [Scheme.CiphertextType] where Scheme.EvaluationKeyType: Sendable {
        var nodes: [Scheme.CiphertextType?] = [ciphertext]
        for level in 0..<levels {
            let stride = 1 << level
            let element = scheme.degree / stride + 1
            let current = nodes
            let children = try ParallelWork.map(count: min(current.count, outputCount), threads: threads) {
                (position) throws(PirError) -> (Scheme.CiphertextType, Scheme.CiphertextType?) in
                let node = current[position]!
                if position + stride >= outputCount {
                    // Every coefficient of the odd half (positions ≡ position + stride) is an
                    // unused selector, i.e. zero: the even half is the node itself, doubled as
                    // c + σ(c) would. No automorphism needed.
                    return (try he { () throws(HomomorphicEncryptionError) in try scheme.add(node, node) }, nil)
                }
                let rotated = try he { () throws(HomomorphicEncryptionError) in
                    try scheme.applyGalois(node, element: element, key: key)
                }
                let even = try he { () throws(HomomorphicEncryptionError) in try scheme.add(node, rotated) }
                let difference = try he { () throws(HomomorphicEncryptionError) in try scheme.subtract(node, rotated) }
                return (even, scheme.multiplyByMonomial(difference, power: -stride))
            }
            var next = [Scheme.CiphertextType?](repeating: nil, count: 2 * stride)
            for (position, pair) in children.enumerated() {
                next[position] = pair.0
                next[position + stride] = pair.1
            }
            nodes = next
        }
        return nodes.prefix(outputCount).map { $0! }
    }
}
