import GRDB

/// The configuration database's schema, as ordered migrations. Never edit a shipped migration:
/// add a new one.
enum StoreSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: configurations and profiles") { db in
            try db.execute(sql: """
                CREATE TABLE profile (
                    identifier TEXT PRIMARY KEY NOT NULL,
                    uuid TEXT,
                    displayName TEXT NOT NULL,
                    organization TEXT,
                    installedAt DATETIME NOT NULL,
                    ownerUID INTEGER NOT NULL,
                    ownerApp TEXT NOT NULL,
                    skippedPayloads TEXT NOT NULL
                );
                CREATE TABLE configuration (
                    id TEXT PRIMARY KEY NOT NULL,
                    ownerUID INTEGER NOT NULL,
                    ownerApp TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    name TEXT NOT NULL,
                    isEnabled BOOLEAN NOT NULL,
                    revision INTEGER NOT NULL CHECK (revision > 0),
                    profileIdentifier TEXT REFERENCES profile(identifier) ON DELETE RESTRICT,
                    body TEXT NOT NULL,
                    updatedAt DATETIME NOT NULL
                );
                CREATE INDEX configuration_owner ON configuration(ownerUID, ownerApp);
                -- Apple's rules, enforced by the database as a last line of defence:
                -- each app has at most one personal VPN configuration ...
                CREATE UNIQUE INDEX one_personal_vpn_per_app ON configuration(ownerUID, ownerApp)
                    WHERE kind = 'personal-vpn';
                -- ... and at most one enterprise (tunnel provider) VPN is enabled on the system.
                CREATE UNIQUE INDEX one_enabled_enterprise_vpn ON configuration(kind)
                    WHERE kind = 'tunnel-provider' AND isEnabled;
                """)
        }
        return migrator
    }
}
