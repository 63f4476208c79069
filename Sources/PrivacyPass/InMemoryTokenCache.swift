import Synchronization

/// A ``PrivateTokenCache`` in memory: for a process whose tokens need not outlive it (a
/// provider that fetches a batch again when it starts), and for tests.
public final class InMemoryTokenCache: PrivateTokenCache {
    private let tokens = Mutex<[PrivateToken]>([])

    public init() {}

    /// How many tokens are held.
    public var count: Int { tokens.withLock { $0.count } }

    public func count(challengeDigest: [UInt8], keyID: [UInt8]) -> Int {
        tokens.withLock { $0.filter { $0.challengeDigest == challengeDigest && $0.tokenKeyID == keyID }.count }
    }

    public func take(challengeDigest: [UInt8], keyID: [UInt8]) throws(PrivacyPassClient.Failure) -> PrivateToken? {
        tokens.withLock { tokens in
            guard let index = tokens.firstIndex(where: { $0.challengeDigest == challengeDigest && $0.tokenKeyID == keyID }) else { return nil }
            return tokens.remove(at: index)
        }
    }

    public func add(_ new: [PrivateToken], keepKeyIDs: Set<[UInt8]>?) throws(PrivacyPassClient.Failure) {
        tokens.withLock { tokens in
            tokens += new
            if let keepKeyIDs { tokens.removeAll { !keepKeyIDs.contains($0.tokenKeyID) } }
        }
    }
}
