import Crypto
import Foundation
import ObliviousHTTP
import Synchronization

/// An Oblivious DoH target's keys in a directory of its own (`odoh-key-<not-before>.key`, 32 raw
/// X25519 bytes, mode 0600), rotated on a `KeyRotationSchedule` (RFC 9230 §5 recommends daily):
/// keys in their overlap still open queries; only keys whose not-before has passed are
/// published, newest first (the preferred one).
public final class ObliviousDoHKeyRing: Sendable {
    public struct Entry: Sendable {
        public let notBefore: UInt64
        public let key: ObliviousDoH.TargetKey
    }

    let storage: KeyDirectory
    public let schedule: KeyRotationSchedule
    private let entries = Mutex([Entry]())

    public init(directory: String, schedule: KeyRotationSchedule, now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws(PrivacyServiceError) {
        storage = try KeyDirectory(path: directory, prefix: "odoh-key-", suffix: ".key")
        self.schedule = schedule
        var loaded: [Entry] = []
        for (stem, path, contents) in try storage.files() {
            guard let notBefore = UInt64(stem) else { throw .file(path: path, reason: "name must be odoh-key-<unix seconds>.key") }
            guard contents.count == 32, let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: contents) else {
                throw .file(path: path, reason: "must hold a 32-byte X25519 private key")
            }
            loaded.append(Entry(notBefore: notBefore, key: ObliviousDoH.TargetKey(privateKey: key)))
        }
        entries.withLock { $0 = loaded.sorted { $0.notBefore < $1.notBefore } }
        try rotate(now: now)
    }

    /// Every key held, oldest first (each still opens queries).
    public var keys: [Entry] { entries.withLock { $0 } }

    /// Creates and retires keys as the schedule says; returns whether anything changed.
    @discardableResult
    public func rotate(now: UInt64) throws(PrivacyServiceError) -> Bool {
        let (result, changed) = try schedule.rotated(
            keys, notBefore: \.notBefore, now: now,
            make: { notBefore, _ throws(PrivacyServiceError) in
                let key = Curve25519.KeyAgreement.PrivateKey()
                try storage.write(Array(key.rawRepresentation), stem: "\(notBefore)")
                return Entry(notBefore: notBefore, key: ObliviousDoH.TargetKey(privateKey: key))
            },
            retire: { storage.remove("\($0.notBefore)") })
        entries.withLock { $0 = result }
        return changed
    }

    /// `ObliviousDoHConfigs` of the published keys, newest (preferred) first.
    public func publishedConfigs(now: UInt64) -> [UInt8] {
        ObliviousDoHConfig.encodeList(keys.reversed().filter { $0.notBefore <= now }.map(\.key.config))
    }
}
