import Foundation
import PrivacyPass
import Synchronization

/// The issuer's signing keys in a directory of its own (`token-key-<not-before>.pem`, mode
/// 0600), rotated with overlap: a successor is generated and published `overlap` seconds
/// before it takes over (`lifetime` after its predecessor's not-before), and a key keeps
/// signing until `overlap` after its successor took over, so clients holding the directory
/// and origins holding its keys never see a gap. Retired key files are deleted.
public final class IssuerKeyRing: Sendable {
    public struct Entry: Sendable {
        public let key: IssuerKey
        public let notBefore: UInt64
    }

    let storage: KeyDirectory
    public var directory: String { storage.path }
    public let schedule: KeyRotationSchedule
    private let entries = Mutex([Entry]())

    /// Loads the keys in `directory` (created 0700 if missing) and rotates as of `now`.
    public init(directory: String, schedule: KeyRotationSchedule, now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws(PrivacyServiceError) {
        storage = try KeyDirectory(path: directory, prefix: "token-key-", suffix: ".pem")
        self.schedule = schedule
        var loaded: [Entry] = []
        for (stem, path, contents) in try storage.files() {
            guard let notBefore = UInt64(stem) else { throw .file(path: path, reason: "name must be token-key-<unix seconds>.pem") }
            do throws(PrivacyPassError) { loaded.append(Entry(key: try IssuerKey(pem: String(decoding: contents, as: UTF8.self)), notBefore: notBefore)) } catch {
                throw .file(path: path, reason: "\(error)")
            }
        }
        entries.withLock { $0 = loaded.sorted { $0.notBefore < $1.notBefore } }
        try rotate(now: now)
    }

    /// Every key still in service, oldest first.
    public var keys: [Entry] { entries.withLock { $0 } }

    /// Generates a successor when one is due, retires keys whose overlap has passed.
    /// Returns whether anything changed.
    @discardableResult
    public func rotate(now: UInt64) throws(PrivacyServiceError) -> Bool {
        let (result, changed) = try schedule.rotated(
            keys, notBefore: \.notBefore, now: now,
            make: { notBefore, current throws(PrivacyServiceError) in try create(notBefore: notBefore, avoiding: Set(current.map { $0.key.keyID[31] })) },
            retire: { storage.remove(String($0.notBefore)) })
        entries.withLock { $0 = result }
        return changed
    }

    /// The key a token request names by the last byte of its key id (several may share it).
    public func keys(truncatedKeyID: UInt8) -> [IssuerKey] {
        keys.map(\.key).filter { $0.keyID[31] == truncatedKeyID }
    }

    /// The key clients should use now: the newest whose not-before has passed.
    public func currentKey(now: UInt64) -> IssuerKey? {
        keys.last { $0.notBefore <= now }?.key ?? keys.first?.key
    }

    /// The directory document (RFC 9578 §4) listing every key in service.
    public func directoryDocument(requestURI: String) -> IssuerDirectory {
        IssuerDirectory(issuerRequestURI: requestURI, tokenKeys: keys.map { .init(publicKeyDER: $0.key.publicKeyDER, notBefore: $0.notBefore) })
    }

    /// A new key whose truncated id (the byte token requests name it by, RFC 9578 §6.1) differs
    /// from those of the keys still in service.
    private func create(notBefore: UInt64, avoiding truncatedIDs: Set<UInt8>) throws(PrivacyServiceError) -> Entry {
        var key: IssuerKey
        repeat {
            do throws(PrivacyPassError) { key = try IssuerKey.generate() } catch { throw .invalidSetting(name: "issuer key", reason: "\(error)") }
        } while truncatedIDs.contains(key.keyID[31])
        try storage.write(Array(key.pem.utf8), stem: String(notBefore))
        return Entry(key: key, notBefore: notBefore)
    }
}
