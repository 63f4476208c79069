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
        key: Scheme.EvaluationKeyType, scheme: Scheme
    ) throws(PirError) -> [Scheme.CiphertextType] {
        var nodes: [Scheme.CiphertextType?] = [ciphertext]
        for level in 0..<levels {
            let stride = 1 << level
            let element = scheme.degree / stride + 1
            var next = [Scheme.CiphertextType?](repeating: nil, count: 2 * stride)
            for (position, node) in nodes.enumerated() {
                guard let node, position < outputCount else { continue }
                if position + stride >= outputCount {
                    // Every coefficient of the odd half (positions ≡ position + stride) is an
                    // unused selector, i.e. zero: the even half is the node itself, doubled as
                    // c + σ(c) would. No automorphism needed.
                    next[position] = try he { () throws(HomomorphicEncryptionError) in try scheme.add(node, node) }
                    continue
                }
                let rotated = try he { () throws(HomomorphicEncryptionError) in
                    try scheme.applyGalois(node, element: element, key: key)
                }
                next[position] = try he { () throws(HomomorphicEncryptionError) in try scheme.add(node, rotated) }
                if position + stride < outputCount {
                    let difference = try he { () throws(HomomorphicEncryptionError) in try scheme.subtract(node, rotated) }
                    next[position + stride] = scheme.multiplyByMonomial(difference, power: -stride)
                }
            }
            nodes = next
        }
        return nodes.prefix(outputCount).map { $0! }
    }
}
