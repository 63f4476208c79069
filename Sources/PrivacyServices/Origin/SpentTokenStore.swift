import Foundation
import GRDB

/// The origin's record of redeemed tokens (nonce and token key id), in SQLite through GRDB so
/// that a token spent before a restart stays spent after it. Each spend is one transaction:
/// a crash leaves the token either recorded or not, never half.
///
/// A nonce is forgotten only when its key can never be accepted again. The store remembers
/// every issuer key it has seen: a key missing from the issuer's directory is *retired* (its
/// tokens are refused, its nonces kept); one that comes back within `retention` is accepted
/// again with its nonces intact; one retired for longer *expires*: its nonces go and it is
/// refused for good, whatever a later directory lists. So no directory answer — empty, partial,
/// replayed or forged — can make a spent token spendable again.
public final class SpentTokenStore: Sendable {
    /// What one look at the issuer's directory changed.
    public struct KeyChanges: Sendable, Equatable {
        /// Keys seen for the first time.
        public var added = 0
        /// Keys that left the directory now.
        public var retired = 0
        /// Retired keys listed again (within the retention).
        public var restored = 0
        /// Keys retired for longer than the retention: refused from now on.
        public var expired = 0
        /// Nonces dropped with the expired keys.
        public var forgottenNonces = 0
        /// The listed keys this origin may accept (listed keys that expired are left out).
        public var acceptable: [[UInt8]] = []
    }

    let database: DatabaseQueue

    /// Opens (creating if needed) the store at `path`; `nil` keeps it in memory (tests).
    public init(path: String?) throws(PrivacyServiceError) {
        do {
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(5)
            database = try path.map { try DatabaseQueue(path: $0, configuration: configuration) } ?? DatabaseQueue()
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(sql: """
                    CREATE TABLE spent_token (
                        key_id BLOB NOT NULL, nonce BLOB NOT NULL, spent_at INTEGER NOT NULL,
                        PRIMARY KEY (key_id, nonce)) WITHOUT ROWID
                    """)
            }
            migrator.registerMigration("v2-token-keys") { db in
                // Keys whose nonces a v1 store holds were in service when it last ran.
                try db.execute(sql: """
                    CREATE TABLE token_key (
                        key_id BLOB PRIMARY KEY NOT NULL, first_seen INTEGER NOT NULL,
                        retired_at INTEGER, expired INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
                    INSERT OR IGNORE INTO token_key (key_id, first_seen)
                        SELECT key_id, MIN(spent_at) FROM spent_token GROUP BY key_id;
                    """)
            }
            try migrator.migrate(database)
        } catch { throw .database("\(path ?? "in-memory"): \(error)") }
    }

    /// Records a redemption; `false` when this nonce was already spent under this key, or the
    /// key has expired.
    public func spend(nonce: [UInt8], keyID: [UInt8], now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws(PrivacyServiceError) -> Bool {
        do {
            return try database.write { db in
                let key = Data(keyID)
                if try Bool.fetchOne(db, sql: "SELECT expired FROM token_key WHERE key_id = ?", arguments: [key]) == true { return false }
                try db.execute(sql: "INSERT OR IGNORE INTO token_key (key_id, first_seen) VALUES (?, ?)", arguments: [key, Int64(now)])
                try db.execute(sql: "INSERT OR IGNORE INTO spent_token (key_id, nonce, spent_at) VALUES (?, ?, ?)",
                               arguments: [key, Data(nonce), Int64(now)])
                return db.changesCount == 1
            }
        } catch { throw .database("\(error)") }
    }

    /// Takes in the key ids the issuer's directory lists now, in one transaction: new keys are
    /// recorded, missing ones retired, returning ones restored, and keys retired at least
    /// `retention` seconds ago expire with their nonces.
    @discardableResult
    public func observeKeys(listed keyIDs: [[UInt8]], retention: UInt64, now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws(PrivacyServiceError) -> KeyChanges {
        do {
            return try database.write { db in
                var changes = KeyChanges()
                let listed = Set(keyIDs.map { Data($0) })
                var known: [Data: (retiredAt: Int64?, expired: Bool)] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT key_id, retired_at, expired FROM token_key") {
                    known[row["key_id"]] = (row["retired_at"], row["expired"])
                }
                for key in listed where known[key] == nil {
                    try db.execute(sql: "INSERT INTO token_key (key_id, first_seen) VALUES (?, ?)", arguments: [key, Int64(now)])
                    changes.added += 1
                }
                for (key, state) in known where !state.expired {
                    if listed.contains(key) {
                        guard state.retiredAt != nil else { continue }
                        try db.execute(sql: "UPDATE token_key SET retired_at = NULL WHERE key_id = ?", arguments: [key])
                        changes.restored += 1
                    } else if let retiredAt = state.retiredAt {
                        guard UInt64(max(retiredAt, 0)) + retention <= now else { continue }
                        try db.execute(sql: "UPDATE token_key SET expired = 1 WHERE key_id = ?", arguments: [key])
                        try db.execute(sql: "DELETE FROM spent_token WHERE key_id = ?", arguments: [key])
                        changes.forgottenNonces += db.changesCount
                        changes.expired += 1
                    } else {
                        try db.execute(sql: "UPDATE token_key SET retired_at = ? WHERE key_id = ?", arguments: [Int64(now), key])
                        changes.retired += 1
                    }
                }
                changes.acceptable = keyIDs.filter { known[Data($0)]?.expired != true }
                return changes
            }
        } catch { throw .database("\(error)") }
    }

    /// Tokens recorded.
    public var count: Int { (try? database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM spent_token") ?? 0 }) ?? 0 }
}
