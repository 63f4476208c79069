import Foundation
import NetExtCore
import PrivacyPass
import Synchronization
import NetExtLinux

/// Unused Privacy Pass tokens, kept in a file only the owner can read (0600) so that tokens
/// fetched ahead of time survive a restart. Each change rewrites the file atomically; a token
/// handed out is removed from the file before it is used, so no token is ever spent twice.
/// File format: "NXTOKEN1", then per token a 2-byte big-endian length and the token (RFC 9577 §2.2).
public final class PrivateTokenStore: PrivateTokenCache {
    static let magic = Array("NXTOKEN1".utf8)
    public let path: String?
    private let tokens: Mutex<[PrivateToken]>

    /// Opens the store at `path` (`nil`: memory only). A damaged file is refused, naming the
    /// offset, rather than silently emptied.
    public init(path: String?) throws(URLFilterError) {
        self.path = path
        var loaded: [PrivateToken] = []
        if let path, let data = FileManager.default.contents(atPath: path) {
            let bytes = [UInt8](data)
            guard bytes.starts(with: Self.magic) else { throw .io(path: path, reason: "not a token store (bad magic)") }
            var offset = Self.magic.count
            while offset < bytes.count {
                guard offset + 2 <= bytes.count else { throw .io(path: path, reason: "token length cut off at offset \(offset)") }
                let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
                guard offset + 2 + length <= bytes.count, let token = try? PrivateToken(decoding: Array(bytes[(offset + 2)..<(offset + 2 + length)])) else {
                    throw .io(path: path, reason: "damaged token at offset \(offset)")
                }
                loaded.append(token)
                offset += 2 + length
            }
        }
        tokens = Mutex(loaded)
    }

    public var count: Int { tokens.withLock { $0.count } }

    /// How many tokens fit this challenge and key.
    public func count(challengeDigest: [UInt8], keyID: [UInt8]) -> Int {
        tokens.withLock { $0.filter { $0.challengeDigest == challengeDigest && $0.tokenKeyID == keyID }.count }
    }

    /// Removes and returns a token for this challenge and key (persisted before returning).
    public func take(challengeDigest: [UInt8], keyID: [UInt8]) throws(PrivacyPassClient.Failure) -> PrivateToken? {
        let (token, snapshot) = tokens.withLock { tokens -> (PrivateToken?, [PrivateToken]) in
            guard let index = tokens.firstIndex(where: { $0.challengeDigest == challengeDigest && $0.tokenKeyID == keyID }) else { return (nil, tokens) }
            return (tokens.remove(at: index), tokens)
        }
        if token != nil { try persist(snapshot) }
        return token
    }

    /// Adds tokens; tokens for keys not in `keepKeyIDs` (retired by the issuer) are dropped.
    public func add(_ new: [PrivateToken], keepKeyIDs: Set<[UInt8]>? = nil) throws(PrivacyPassClient.Failure) {
        let snapshot = tokens.withLock { tokens -> [PrivateToken] in
            tokens += new
            if let keepKeyIDs { tokens.removeAll { !keepKeyIDs.contains($0.tokenKeyID) } }
            return tokens
        }
        try persist(snapshot)
    }

    private func persist(_ snapshot: [PrivateToken]) throws(PrivacyPassClient.Failure) {
        guard let path else { return }
        var bytes = Self.magic
        for token in snapshot {
            let encoded = token.encoded()
            bytes += [UInt8(encoded.count >> 8), UInt8(encoded.count & 0xFF)] + encoded
        }
        do throws(AtomicFile.Failure) { try AtomicFile.write(bytes, to: path, mode: 0o600) } catch { throw .cache("\(path): \(error.reason)") }
    }
}
