import Foundation
import GRDB
import NetExtCore
import NetExtIPC

/// netextd's preferences store: configurations and installed profiles in SQLite (through GRDB),
/// with Apple's rules applied inside transactions. A crash at any moment leaves either the old
/// or the new state: every change is one SQLite transaction.
public final class ConfigurationStore: Sendable {
    /// The database file, or nil for an in-memory store.
    public let path: String?
    let database: DatabaseQueue

    /// What a save changed: the saved configuration and any others it disabled.
    public struct SaveOutcome: Sendable {
        public var saved: Configuration
        public var disabled: [Configuration]
    }

    /// Opens (creating if needed) the store at `path` and migrates it. A file that is not a
    /// healthy SQLite database is refused with an error naming it, never wiped.
    public init(path: String) throws(NetExtError) {
        self.path = path
        do {
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(5)
            database = try DatabaseQueue(path: path, configuration: configuration)
            try database.writeWithoutTransaction { db in
                let check = try String.fetchAll(db, sql: "PRAGMA quick_check")
                guard check == ["ok"] else {
                    throw NetExtError.readWrite("quick_check reported: \(check.prefix(3).joined(separator: "; "))")
                }
            }
            try StoreSchema.migrator.migrate(database)
        } catch let error as NetExtError {
            throw .readWrite("the configuration database \(path) is damaged (\(error.message)); netextd will not start. Move the file aside to start with an empty store, or restore a backup")
        } catch {
            throw .readWrite("the configuration database \(path) cannot be opened (\(error)); netextd will not start. Move the file aside to start with an empty store, or restore a backup")
        }
    }

    /// An in-memory store, for tests.
    public init() throws(NetExtError) {
        path = nil
        do {
            database = try DatabaseQueue()
            try StoreSchema.migrator.migrate(database)
        } catch {
            throw .readWrite("cannot create an in-memory store: \(error)")
        }
    }

    // MARK: Reading

    /// All configurations, ordered by name.
    public func allConfigurations() throws(NetExtError) -> [Configuration] {
        try read { db in try Self.decodeAll(db, sql: "SELECT body FROM configuration ORDER BY name, id") }
    }

    /// How many configurations the store holds (a count, nothing decoded).
    public func configurationCount() throws(NetExtError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM configuration") ?? 0 }
    }

    /// One configuration, or nil.
    public func configuration(id: UUID) throws(NetExtError) -> Configuration? {
        try read { db in try Self.decodeAll(db, sql: "SELECT body FROM configuration WHERE id = ?", arguments: [id.uuidString]).first }
    }

    /// Installed profiles, ordered by identifier: all of them, or those `owner` installed.
    public func profiles(installedBy owner: Owner? = nil) throws(NetExtError) -> [ProfileSummary] {
        try read { db in
            let rows = if let owner {
                try Row.fetchAll(db, sql: "SELECT * FROM profile WHERE ownerUID = ? AND ownerApp = ? ORDER BY identifier", arguments: [owner.uid, owner.appIdentifier])
            } else {
                try Row.fetchAll(db, sql: "SELECT * FROM profile ORDER BY identifier")
            }
            return try rows.map { row in
                let identifier: String = row["identifier"]
                let ids = try String.fetchAll(db, sql: "SELECT id FROM configuration WHERE profileIdentifier = ? ORDER BY name", arguments: [identifier])
                let skippedJSON: String = row["skippedPayloads"]
                let skipped = (try? JSONDecoder().decode([SkippedPayload].self, from: Data(skippedJSON.utf8))) ?? []
                return ProfileSummary(
                    identifier: identifier, displayName: row["displayName"], organization: row["organization"],
                    installedAt: row["installedAt"], configurationIDs: ids.compactMap(UUID.init(uuidString:)),
                    skippedPayloads: skipped)
            }
        }
    }

    /// Every secret reference any configuration holds (for garbage collection of secrets).
    public func secretReferences() throws(NetExtError) -> Set<String> {
        Set(try allConfigurations().flatMap(\.secretReferences))
    }

    // MARK: Writing

    /// Saves a configuration under Apple's rules. `configuration.revision` must be the stored
    /// revision (0 for a new one), else `configurationStale`. Enabling an enterprise VPN
    /// disables every other one in the same transaction.
    public func save(_ configuration: Configuration, now: Date = Date()) throws(NetExtError) -> SaveOutcome {
        try configuration.validate()
        return try write { db in try Self.save(configuration, in: db, now: now) }
    }

    /// Removes a configuration and returns it.
    public func remove(id: UUID) throws(NetExtError) -> Configuration {
        try write { db in
            guard let existing = try Self.decodeAll(db, sql: "SELECT body FROM configuration WHERE id = ?", arguments: [id.uuidString]).first else {
                throw NetExtError.unknown("no configuration with id \(id)")
            }
            try db.execute(sql: "DELETE FROM configuration WHERE id = ?", arguments: [id.uuidString])
            try Self.deleteEmptyProfiles(db)
            return existing
        }
    }

    /// Installs a profile's configurations as one transaction, replacing an earlier install of
    /// the same profile identifier. Returns the saved and removed configurations.
    public func install(
        profile: ConfigurationProfile, configurations: [Configuration], owner: Owner, now: Date = Date()
    ) throws(NetExtError) -> (saved: [SaveOutcome], removed: [Configuration]) {
        for configuration in configurations { try configuration.validate() }
        return try write { db in
            let previous = try Self.decodeAll(db, sql: "SELECT body FROM configuration WHERE profileIdentifier = ?", arguments: [profile.identifier])
            let keptIDs = Set(configurations.map(\.id))
            let removed = previous.filter { !keptIDs.contains($0.id) }
            for configuration in removed {
                try db.execute(sql: "DELETE FROM configuration WHERE id = ?", arguments: [configuration.id.uuidString])
            }
            let skipped = String(decoding: try JSONEncoder().encode(profile.skippedPayloads), as: UTF8.self)
            try db.execute(sql: """
                INSERT INTO profile (identifier, uuid, displayName, organization, installedAt, ownerUID, ownerApp, skippedPayloads)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(identifier) DO UPDATE SET uuid = excluded.uuid, displayName = excluded.displayName,
                    organization = excluded.organization, installedAt = excluded.installedAt, skippedPayloads = excluded.skippedPayloads
                """, arguments: [profile.identifier, profile.uuid, profile.displayName, profile.organization, now, owner.uid, owner.appIdentifier, skipped])
            var outcomes: [SaveOutcome] = []
            for var configuration in configurations {
                // A reinstall replaces the earlier copy whatever its revision.
                let stored = previous.first(where: { $0.id == configuration.id })
                if let stored, stored.profileIdentifier == profile.identifier {
                    configuration.revision = stored.revision
                } else if try Self.exists(db, id: configuration.id) {
                    throw NetExtError.invalid("payload UUID \(configuration.id) is already used by a configuration that is not part of profile '\(profile.identifier)'")
                }
                configuration.profileIdentifier = profile.identifier
                outcomes.append(try Self.save(configuration, in: db, now: now))
            }
            return (outcomes, removed)
        }
    }

    /// Removes a profile and every configuration it installed.
    public func removeProfile(identifier: String) throws(NetExtError) -> [Configuration] {
        try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM profile WHERE identifier = ?", arguments: [identifier]) != nil else {
                throw NetExtError.unknown("no installed profile with identifier '\(identifier)'")
            }
            let removed = try Self.decodeAll(db, sql: "SELECT body FROM configuration WHERE profileIdentifier = ?", arguments: [identifier])
            try db.execute(sql: "DELETE FROM configuration WHERE profileIdentifier = ?", arguments: [identifier])
            try db.execute(sql: "DELETE FROM profile WHERE identifier = ?", arguments: [identifier])
            return removed
        }
    }

    /// The owner of an installed profile, or nil.
    public func profileOwner(identifier: String) throws(NetExtError) -> Owner? {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT ownerUID, ownerApp FROM profile WHERE identifier = ?", arguments: [identifier]) else { return nil }
            return Owner(uid: row["ownerUID"], appIdentifier: row["ownerApp"])
        }
    }
}
