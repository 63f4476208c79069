import Foundation
import GRDB
import NetExtHTTP

/// How a task ended, kept until the app acknowledges it: what its events say.
struct TransferOutcome: Sendable, Codable, Equatable {
    var response: TransferResponse?
    /// A download's file.
    var location: String?
    /// An upload's answer body.
    var body: Data?
    /// Why it failed; nil for success.
    var error: String?
    var cancelled = false
}

/// One task's record.
struct TransferRecord: Sendable, Equatable {
    var id: Int
    var session: String
    var spec: TransferSpec
    var state: TransferTaskStatus.State
    var created: Date
    var bytesReceived: Int64 = 0
    var bytesExpected: Int64?
    var retries = 0
    var lastError: String?
    var outcome: TransferOutcome?

    var status: TransferTaskStatus {
        TransferTaskStatus(
            task: id, kind: spec.kind, url: spec.request.url.absoluteString, state: state, bytesReceived: bytesReceived,
            bytesExpected: bytesExpected, retries: retries, lastError: outcome?.error ?? lastError)
    }
}

/// The transfer service's tasks, in SQLite through GRDB (one file per user): each change is one
/// transaction, so a service killed at any point finds every task as it last recorded it, and
/// the partial file on disk says how far a download got.
final class TransferStore: Sendable {
    private let database: DatabaseQueue
    let path: String?

    /// Opens (creating if needed) the store at `path`; nil keeps it in memory (tests).
    init(path: String?) throws(TransferServiceError) {
        self.path = path
        do {
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(5)
            database = try path.map { try DatabaseQueue(path: $0, configuration: configuration) } ?? DatabaseQueue()
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(sql: """
                    CREATE TABLE transfer_task (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        session TEXT NOT NULL,
                        spec BLOB NOT NULL,
                        state TEXT NOT NULL,
                        created REAL NOT NULL,
                        bytes_received INTEGER NOT NULL DEFAULT 0,
                        bytes_expected INTEGER,
                        retries INTEGER NOT NULL DEFAULT 0,
                        last_error TEXT,
                        outcome BLOB);
                    CREATE INDEX transfer_task_session ON transfer_task (session);
                    """)
            }
            try migrator.migrate(database)
        } catch { throw .store("\(path ?? "in-memory"): \(error)") }
    }

    /// Records a new suspended task and returns it.
    func insert(session: String, spec: TransferSpec, now: Date = Date()) throws(TransferServiceError) -> TransferRecord {
        let encoded = try encode(spec)
        return try write { db in
            try db.execute(
                sql: "INSERT INTO transfer_task (session, spec, state, created) VALUES (?, ?, ?, ?)",
                arguments: [session, encoded, TransferTaskStatus.State.suspended.rawValue, now.timeIntervalSince1970])
            return TransferRecord(id: Int(db.lastInsertedRowID), session: session, spec: spec, state: .suspended, created: now)
        }
    }

    func record(_ id: Int) throws(TransferServiceError) -> TransferRecord? {
        try read { db in try Row.fetchOne(db, sql: "SELECT * FROM transfer_task WHERE id = ?", arguments: [id]) }.map { row throws(TransferServiceError) in
            try Self.record(row)
        }
    }

    func records(session: String) throws(TransferServiceError) -> [TransferRecord] {
        let rows = try read { db in try Row.fetchAll(db, sql: "SELECT * FROM transfer_task WHERE session = ? ORDER BY id", arguments: [session]) }
        return try rows.map { row throws(TransferServiceError) in try Self.record(row) }
    }

    /// Tasks that were running when the service last stopped.
    func running() throws(TransferServiceError) -> [TransferRecord] {
        let rows = try read { db in try Row.fetchAll(db, sql: "SELECT * FROM transfer_task WHERE state = 'running' ORDER BY id") }
        return try rows.map { row throws(TransferServiceError) in try Self.record(row) }
    }

    /// Every task's number (the service removes directories of tasks no longer recorded).
    func allIDs() throws(TransferServiceError) -> Set<Int> {
        Set(try read { db in try Int.fetchAll(db, sql: "SELECT id FROM transfer_task") })
    }

    func setState(_ id: Int, _ state: TransferTaskStatus.State) throws(TransferServiceError) {
        try write { db in try db.execute(sql: "UPDATE transfer_task SET state = ? WHERE id = ?", arguments: [state.rawValue, id]) }
    }

    /// A failed attempt that will be tried again.
    func noteRetry(_ id: Int, error: String, bytesReceived: Int64) throws(TransferServiceError) {
        try write { db in
            try db.execute(
                sql: "UPDATE transfer_task SET retries = retries + 1, last_error = ?, bytes_received = ? WHERE id = ?",
                arguments: [error, bytesReceived, id])
        }
    }

    func noteProgress(_ id: Int, bytesReceived: Int64, bytesExpected: Int64?) throws(TransferServiceError) {
        try write { db in
            try db.execute(
                sql: "UPDATE transfer_task SET bytes_received = ?, bytes_expected = ? WHERE id = ?", arguments: [bytesReceived, bytesExpected, id])
        }
    }

    func complete(_ id: Int, outcome: TransferOutcome) throws(TransferServiceError) {
        let encoded = try encode(outcome)
        try write { db in
            try db.execute(sql: "UPDATE transfer_task SET state = 'completed', outcome = ? WHERE id = ?", arguments: [encoded, id])
        }
    }

    func delete(_ id: Int) throws(TransferServiceError) {
        try write { db in try db.execute(sql: "DELETE FROM transfer_task WHERE id = ?", arguments: [id]) }
    }

    // MARK: Rows

    private static func record(_ row: Row) throws(TransferServiceError) -> TransferRecord {
        let id: Int = row["id"]
        let specData: Data = row["spec"]
        let stateText: String = row["state"]
        guard let spec = try? JSONDecoder().decode(TransferSpec.self, from: specData) else {
            throw .store("task \(id)'s request in the store cannot be read")
        }
        guard let state = TransferTaskStatus.State(rawValue: stateText) else {
            throw .store("task \(id) has the unknown state '\(stateText)'")
        }
        var outcome: TransferOutcome?
        if let data: Data = row["outcome"] {
            guard let decoded = try? JSONDecoder().decode(TransferOutcome.self, from: data) else {
                throw .store("task \(id)'s outcome in the store cannot be read")
            }
            outcome = decoded
        }
        return TransferRecord(
            id: id, session: row["session"], spec: spec, state: state, created: Date(timeIntervalSince1970: row["created"]),
            bytesReceived: row["bytes_received"], bytesExpected: row["bytes_expected"], retries: row["retries"],
            lastError: row["last_error"], outcome: outcome)
    }

    private func encode(_ value: some Encodable) throws(TransferServiceError) -> Data {
        do { return try JSONEncoder().encode(value) } catch { throw .store("cannot encode a task: \(error)") }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(TransferServiceError) -> T {
        do { return try database.read(body) } catch { throw .store("\(error)") }
    }

    private func write<T>(_ body: (Database) throws -> T) throws(TransferServiceError) -> T {
        do { return try database.write(body) } catch { throw .store("\(error)") }
    }
}

/// Why the transfer service cannot go on, in sentences.
enum TransferServiceError: Error, CustomStringConvertible {
    case store(String)
    case setUp(String)

    var description: String {
        switch self {
        case .store(let reason): "The transfer store failed: \(reason)."
        case .setUp(let reason): "The transfer service cannot start: \(reason)."
        }
    }
}
