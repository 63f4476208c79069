import Foundation
import GRDB
import NetExtCore

extension ConfigurationStore {
    static func save(_ input: Configuration, in db: Database, now: Date) throws -> SaveOutcome {
        var configuration = input
        let storedRevision = try Int.fetchOne(db, sql: "SELECT revision FROM configuration WHERE id = ?", arguments: [configuration.id.uuidString])
        switch (storedRevision, configuration.revision) {
        case (nil, 0):
            break
        case (nil, _):
            throw NetExtError.stale("configuration \(configuration.id) was removed since it was loaded (revision \(configuration.revision)); reload it")
        case (let stored?, let given) where stored != given:
            throw NetExtError.stale("configuration '\(configuration.localizedDescription)' was changed by another client since it was loaded (stored revision \(stored), yours \(given)); reload it and apply your change again")
        default:
            break
        }
        if configuration.kind == .personalVPN {
            if let other = try String.fetchOne(db, sql: """
                SELECT name FROM configuration WHERE kind = 'personal-vpn' AND ownerUID = ? AND ownerApp = ? AND id != ?
                """, arguments: [configuration.owner.uid, configuration.owner.appIdentifier, configuration.id.uuidString]) {
                throw NetExtError.invalid("app \(configuration.owner) already has a personal VPN configuration ('\(other)'); an app may have only one")
            }
        }
        var disabled: [Configuration] = []
        if configuration.kind == .tunnelProvider && configuration.isEnabled {
            let others = try decodeAll(db, sql: """
                SELECT body FROM configuration WHERE kind = 'tunnel-provider' AND isEnabled AND id != ?
                """, arguments: [configuration.id.uuidString])
            for var other in others {
                other.isEnabled = false
                other.revision += 1
                try upsert(other, in: db, now: now)
                disabled.append(other)
            }
        }
        configuration.revision = (storedRevision ?? 0) + 1
        try upsert(configuration, in: db, now: now)
        return SaveOutcome(saved: configuration, disabled: disabled)
    }

    static func upsert(_ configuration: Configuration, in db: Database, now: Date) throws {
        let body = String(decoding: try JSONEncoder().encode(configuration), as: UTF8.self)
        try db.execute(sql: """
            INSERT INTO configuration (id, ownerUID, ownerApp, kind, name, isEnabled, revision, profileIdentifier, body, updatedAt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET ownerUID = excluded.ownerUID, ownerApp = excluded.ownerApp, kind = excluded.kind,
                name = excluded.name, isEnabled = excluded.isEnabled, revision = excluded.revision,
                profileIdentifier = excluded.profileIdentifier, body = excluded.body, updatedAt = excluded.updatedAt
            """, arguments: [
                configuration.id.uuidString, configuration.owner.uid, configuration.owner.appIdentifier,
                configuration.kind.rawValue, configuration.localizedDescription, configuration.isEnabled,
                configuration.revision, configuration.profileIdentifier, body, now,
            ])
    }

    static func decodeAll(_ db: Database, sql: String, arguments: StatementArguments = []) throws -> [Configuration] {
        let decoder = JSONDecoder()
        return try String.fetchAll(db, sql: sql, arguments: arguments).map { body in
            do {
                return try decoder.decode(Configuration.self, from: Data(body.utf8))
            } catch {
                throw NetExtError.readWrite("a stored configuration cannot be decoded: \(error)")
            }
        }
    }

    static func exists(_ db: Database, id: UUID) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM configuration WHERE id = ?", arguments: [id.uuidString]) != nil
    }

    static func deleteEmptyProfiles(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM profile WHERE identifier NOT IN (SELECT profileIdentifier FROM configuration WHERE profileIdentifier IS NOT NULL)")
    }

    func read<T>(_ body: (Database) throws -> T) throws(NetExtError) -> T {
        do { return try database.read(body) } catch { throw Self.mapped(error) }
    }

    func write<T>(_ body: (Database) throws -> T) throws(NetExtError) -> T {
        do { return try database.write(body) } catch { throw Self.mapped(error) }
    }

    static func mapped(_ error: any Error) -> NetExtError {
        if let error = error as? NetExtError { return error }
        if let error = error as? DatabaseError, error.resultCode == .SQLITE_CONSTRAINT {
            return .invalid("the change breaks a store rule: \(error.message ?? "constraint failed")")
        }
        return .readWrite("the configuration store failed: \(error)")
    }
}

extension Configuration {
    /// The secret references this configuration holds.
    var secretReferences: [String] {
        switch protocolConfiguration {
        case .tunnelProvider(let settings): [settings.passwordReference].compactMap { $0 }
        case .personalVPN(let settings): [settings.passwordReference, settings.sharedSecretReference].compactMap { $0 }
        case .urlFilter(let settings): [settings.pirAuthenticationTokenReference].compactMap { $0 }
        // An identity installed from a profile is a file of the secret store (ProfileIdentityPEM).
        case .relay(let settings):
            settings.relays.compactMap { $0.identityReference.flatMap(Self.secretReference(inPath:)) } + [settings.privacyPassTokenReference].compactMap { $0 }
        case .dnsSettings(let settings): [settings.identityReference.flatMap(Self.secretReference(inPath:))].compactMap { $0 }
        case .contentFilter: []
        }
    }

    /// The secret reference an identity path names when it is a file of the secret store
    /// (`…/secret-<uuid>`, as netextd installs profiles' identities); nil for a path of the
    /// user's own, which is never deleted (deleting a reference touches only the store's directory).
    static func secretReference(inPath path: String) -> String? {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
        guard name.hasPrefix("secret-"), name.count > 7, name.allSatisfy(allowed.contains) else { return nil }
        return name
    }
}
