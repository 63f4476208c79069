import Crypto
import Foundation
import ObliviousHTTP
import Synchronization

/// The Oblivious HTTP gateway's keys in a directory of its own (`ohttp-key-<id>-<not-before>.key`,
/// 32 raw X25519 bytes, mode 0600), rotated on a `KeyRotationSchedule`: each new key takes the
/// next key id (mod 256); keys in their overlap still open requests; only keys whose
/// not-before has passed are published.
public final class GatewayKeyRing: Sendable {
    public struct Entry: Sendable {
        public let keyID: UInt8
        public let notBefore: UInt64
        public let privateKey: Curve25519.KeyAgreement.PrivateKey
        public var config: OHTTPKeyConfig { OHTTPKeyConfig(keyID: keyID, publicKey: privateKey.publicKey) }
    }

    let storage: KeyDirectory
    public var directory: String { storage.path }
    public let schedule: KeyRotationSchedule
    private let entries = Mutex([Entry]())

    public init(directory: String, schedule: KeyRotationSchedule, now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws(PrivacyServiceError) {
        storage = try KeyDirectory(path: directory, prefix: "ohttp-key-", suffix: ".key")
        self.schedule = schedule
        var loaded: [Entry] = []
        for (stem, path, contents) in try storage.files() {
            let fields = stem.split(separator: "-")
            guard fields.count == 2, let id = UInt8(fields[0]), let notBefore = UInt64(fields[1]) else {
                throw .file(path: path, reason: "name must be ohttp-key-<key id 0–255>-<unix seconds>.key")
            }
            guard contents.count == 32, let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: contents) else {
                throw .file(path: path, reason: "must hold a 32-byte X25519 private key")
            }
            loaded.append(Entry(keyID: id, notBefore: notBefore, privateKey: key))
        }
        entries.withLock { $0 = loaded.sorted { $0.notBefore < $1.notBefore } }
        try rotate(now: now)
    }

    public var keys: [Entry] { entries.withLock { $0 } }

    /// Creates and retires keys as the schedule says; returns whether anything changed.
    @discardableResult
    public func rotate(now: UInt64) throws(PrivacyServiceError) -> Bool {
        let (result, changed) = try schedule.rotated(
            keys, notBefore: \.notBefore, now: now,
            make: { notBefore, current throws(PrivacyServiceError) in
                let id = current.last.map { $0.keyID &+ 1 } ?? 1
                let key = Curve25519.KeyAgreement.PrivateKey()
                try storage.write(Array(key.rawRepresentation), stem: "\(id)-\(notBefore)")
                return Entry(keyID: id, notBefore: notBefore, privateKey: key)
            },
            retire: { storage.remove("\($0.keyID)-\($0.notBefore)") })
        entries.withLock { $0 = result }
        return changed
    }

    /// The key for a request's key id.
    public func key(id: UInt8) -> Entry? { keys.last { $0.keyID == id } }

    /// `application/ohttp-keys` (RFC 9540 §3): each published configuration prefixed by its
    /// 2-byte length, newest first.
    public func publishedConfigs(now: UInt64) -> [UInt8] {
        OHTTPKeyConfig.encodeList(keys.reversed().filter { $0.notBefore <= now }.map(\.config))
    }
}
