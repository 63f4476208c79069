import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// Loads a configuration by id or by name among those the caller can see: one request, the
/// name resolved by netextd.
enum ConfigurationLookup {
    static func find(_ nameOrID: String, client: ControlClient) async throws -> Configuration {
        try await client.call(LoadConfiguration(ConfigurationReference(nameOrID))).configuration
    }
}
