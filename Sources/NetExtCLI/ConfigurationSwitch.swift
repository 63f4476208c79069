import NetExt
import NetExtCore

/// `netext urlfilter|dns enable|disable`: turns the app's one configuration of a kind on or
/// off — loaded through its shared manager, refused when it was never saved, flipped, saved.
enum ConfigurationSwitch {
    /// - Parameters:
    ///   - what: the kind as people read it ("URL filter", "DNS settings").
    ///   - missing: the refusal when none was saved, naming the command that creates one.
    static func set<Manager: ConfigurationManager>(
        _ enabled: Bool, options: ClientOptions, what: String, missing: String,
        shared: (ControlClient) async throws(NetExtError) -> Manager
    ) async throws {
        try await reportingFailures {
            try await options.withClient { client in
                var manager = try await shared(client)
                guard manager.configuration.revision > 0 else { throw NetExtError.invalid(missing) }
                manager.isEnabled = enabled
                try await manager.saveToPreferences()
                print("\(what) \(manager.localizedDescription) \(enabled ? "enabled" : "disabled")")
            }
        }
    }
}
