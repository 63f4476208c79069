import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

struct CreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a tunnel-provider VPN configuration (as an app would with TunnelProviderManager).")
    @OptionGroup var options: ClientOptions
    @Option(help: "The name shown to people.") var name: String
    @Option(help: "The provider's bundle identifier.") var provider: String
    @Option(help: "The VPN server's address or host name (a DNS proxy may have none).") var server = ""
    @Option(help: "packet-tunnel, app-proxy, transparent-proxy or dns-proxy.") var providerType = "packet-tunnel"
    @Option(help: "The user name.") var username: String?
    @Flag(help: "Read the password from standard input (one line).") var passwordStdin = false
    @Option(name: .customLong("config"), help: "A providerConfiguration entry, key=value (repeatable; values are strings).") var providerConfiguration: [String] = []
    @Flag(help: "Enable the configuration (disables any other enabled enterprise VPN, and says which).") var enable = false
    @Flag(help: "Create it even if a configuration with the same name exists.") var allowDuplicateName = false
    @Flag(help: "Send all traffic through the tunnel and block everything else while enabled (kill switch).") var includeAllNetworks = false
    @Flag(help: "With --include-all-networks: local subnets stay reachable outside the tunnel.") var excludeLocalNetworks = false
    @Flag(help: "Traffic to the tunnel's routes never leaves outside the tunnel while enabled.") var enforceRoutes = false
    @Flag(help: "A per-app VPN: only the apps bound to it (netext app bind) enter the tunnel, to any destination.") var perApp = false

    func run() async throws {
        try await reportingFailures {
            guard let type = TunnelProviderProtocol.ProviderType(rawValue: providerType) else {
                throw UsageError("--provider-type: '\(providerType)' is not packet-tunnel, app-proxy, transparent-proxy or dns-proxy")
            }
            let client = try await options.connect()
            defer { client.close() }
            var manager = TunnelProviderManager(client: client, providerBundleIdentifier: provider, serverAddress: server)
            manager.localizedDescription = name
            manager.isEnabled = enable
            var settings = manager.protocolConfiguration!
            settings.providerType = type
            settings.username = username
            settings.providerConfiguration = try KeyValue.parse(providerConfiguration, option: "--config")
            settings.includeAllNetworks = includeAllNetworks
            settings.excludeLocalNetworks = excludeLocalNetworks
            settings.enforceRoutes = enforceRoutes
            // The per-app VPN's VPNUUID, as a profile's applayer payload gives one.
            if perApp { settings.perAppUUID = manager.id.uuidString }
            manager.protocolConfiguration = settings
            let password = passwordStdin ? try StandardInput.readSecretLine() : nil
            let disabled = try await manager.saveToPreferences(password: password, allowsDuplicateName: allowDuplicateName)
            if options.json { try options.printJSON(manager.configuration) } else {
                print("created \(manager.localizedDescription) (\(manager.id.uuidString))\(manager.isEnabled ? ", enabled" : "")")
                SetEnabled.sayDisabled(disabled)
            }
        }
    }
}

struct EnableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Enable a configuration (for an enterprise VPN this disables the others).")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String

    func run() async throws {
        try await reportingFailures { try await SetEnabled.run(options: options, name: name, enabled: true) }
    }
}

struct DisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Disable a configuration (stopping its connection).")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String

    func run() async throws {
        try await reportingFailures { try await SetEnabled.run(options: options, name: name, enabled: false) }
    }
}

/// Load, change `isEnabled`, save with the loaded revision: the same path an app takes.
enum SetEnabled {
    static func run(options: ClientOptions, name: String, enabled: Bool) async throws {
        let result = try await options.withConfiguration(name, forChange: true) { client, loaded in
            var configuration = loaded
            configuration.isEnabled = enabled
            return try await client.call(SaveConfiguration(configuration: configuration))
        }
        let saved = result.configuration
        if options.json { try options.printJSON(saved) } else {
            print("\(enabled ? "enabled" : "disabled") \(saved.localizedDescription) (revision \(saved.revision))")
            sayDisabled(result.disabled ?? [])
        }
    }

    /// One line per configuration a save disabled, so that nothing changes unsaid.
    static func sayDisabled(_ disabled: [ConfigurationName]) {
        for other in disabled {
            print("disabled \(other.name) (\(other.id.uuidString)): only one enterprise VPN may be enabled at a time")
        }
    }
}

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a configuration (stopping its connection).")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String

    func run() async throws {
        try await reportingFailures {
            let configuration = try await options.withConfiguration(name, forChange: true) { client, configuration in
                _ = try await client.call(RemoveConfiguration(.id(configuration.id)))
                return configuration
            }
            if options.json { try options.printJSON(["removed": configuration.id.uuidString]) } else {
                print("removed \(configuration.localizedDescription) (\(configuration.id.uuidString))")
            }
        }
    }
}

/// `key=value` arguments.
enum KeyValue {
    static func parse(_ pairs: [String], option: String) throws -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("\(option) '\(pair)': expected key=value")
            }
            result[String(pair[..<equals])] = .string(String(pair[pair.index(after: equals)...]))
        }
        return result
    }
}

/// Reading a secret from standard input without echoing it anywhere.
enum StandardInput {
    static func readSecretLine(option: String = "--password-stdin", what: String = "password") throws -> String {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw NetExtError.invalid("\(option): standard input held no \(what)")
        }
        return line
    }

    /// Everything on standard input.
    static func readAll() -> Data {
        FileHandle.standardInput.readDataToEndOfFile()
    }
}

struct OnDemandCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "on-demand",
        abstract: "Turn connect-on-demand on or off, optionally replacing the rules (a JSON array of rules, as `netext show --json` prints them).")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String
    @Argument(help: "on or off.") var state: String
    @Option(help: "A JSON file with the rules, e.g. [{\"action\": \"disconnect\", \"interfaceTypeMatch\": \"any\", \"dnsSearchDomainMatch\": [\"office.test\"]}, {\"action\": \"connect\", \"interfaceTypeMatch\": \"any\"}].") var rules: String?

    func run() async throws {
        try await reportingFailures {
            guard state == "on" || state == "off" else { throw UsageError("the state must be 'on' or 'off', not '\(state)'") }
            var newRules: [OnDemandRule]?
            if let rules {
                guard let data = FileManager.default.contents(atPath: rules) else { throw NetExtError.invalid("--rules: cannot read \(rules)") }
                do { newRules = try JSONDecoder().decode([OnDemandRule].self, from: data) } catch {
                    throw NetExtError.invalid("--rules \(rules): \(JSONDecodingText.describe(error, data: data))")
                }
            }
            let saved = try await options.withConfiguration(name, forChange: true) { client, loaded in
                var configuration = loaded
                configuration.isOnDemandEnabled = state == "on"
                if let newRules { configuration.onDemandRules = newRules }
                return try await client.call(SaveConfiguration(configuration: configuration)).configuration
            }
            if options.json { try options.printJSON(saved) } else {
                print("on-demand \(saved.isOnDemandEnabled ? "on" : "off") for \(saved.localizedDescription): \(saved.onDemandRules.count) rule(s) (revision \(saved.revision))")
            }
        }
    }
}
