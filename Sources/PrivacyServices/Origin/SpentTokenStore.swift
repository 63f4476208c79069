import Foundation
import GRDB

/// The origin's record of redeemed tokens (nonce and token key id), in SQLite through GRDB so
/// that a token spent before a restart stays spent after it. Each spend is one transaction:
/// a crash leaves the token either recorded or not, never half. Rows are dropped with their
/// key, when the issuer stops publishing it (a token for a retired key fails verification
/// anyway, so its nonces need not be kept).
public final class SpentTokenStore: Sendable {
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
            try migrator.migrate(database)
        } catch { throw .database("\(path ?? "in-memory"): \(error)") }
    }

    /// Records a redemption; `false` when this nonce was already spent under this key.
    public func spend(nonce: [UInt8], keyID: [UInt8], now: UInt64 = UInt64(Date().timeIntervalSince1970)) throws(PrivacyServiceError) -> Bool {
        do {
            return try database.write { db in
                try db.execute(sql: "INSERT OR IGNORE INTO spent_token (key_id, nonce, spent_at) VALUES (?, ?, ?)",
                               arguments: [Data(keyID), Data(nonce), Int64(now)])
                return db.changesCount == 1
            }
        } catch { throw .database("\(error)") }
    }

    /// Drops the nonces of every key not in `keyIDs`; returns how many rows went.
    @discardableResult
    public func forgetKeys(except keyIDs: [[UInt8]]) throws(PrivacyServiceError) -> Int {
        do {
            return try database.write { db in
                let keep = keyIDs.map { Data($0) }
                if keep.isEmpty {
                    try db.execute(sql: "DELETE FROM spent_token")
                } else {
                    let marks = Array(repeating: "?", count: keep.count).joined(separator: ",")
                    try db.execute(sql: "DELETE FROM spent_token WHERE key_id NOT IN (\(marks))", arguments: StatementArguments(keep))
                }
                return db.changesCount
            }
        } catch { throw .database("\(error)") }
    }

    /// Tokens recorded.
    public var count: Int { (try? database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM spent_token") ?? 0 }) ?? 0 }
}
