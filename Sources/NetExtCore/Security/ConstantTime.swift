/// Comparisons whose time does not depend on where inputs differ (credentials, MACs, token
/// hashes).
public enum ConstantTime {
    /// Equal length and equal bytes; the loop always runs over the whole input.
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
