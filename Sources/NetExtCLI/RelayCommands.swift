import ArgumentParser
import Foundation
import NetExt
import NetExtCore

/// `netext relay …`: the app's network relays (Apple's NERelayManager).
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Configure MASQUE relays (HTTP/2 CONNECT and connect-udp) for some domains or every connection.",
        subcommands: [RelayConfigureCommand.self, RelayEnableCommand.self, RelayDisableCommand.self, RelayShowCommand.self])
}

struct RelayConfigureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "configure", abstract: "Create or change your app's relay configuration.",
        discussion: """
            --relay URL names a relay by its HTTP/2 URL, https://HOST[:PORT] optionally followed by its connect-udp URI \
            template (RFC 9298 §2); several --relay are chained, the first reached directly. --header-file, --public-key and \
            --client-identity apply to every relay; for settings that differ from relay to relay give --settings FILE, a JSON \
            object of the relay settings (the protocolConfiguration.settings that `netext show NAME --json` prints). Without --match-domain or --match-fqdn \
            every connection goes through the relays, except names within --exclude-domain or equal to --exclude-fqdn.
            """)
    @OptionGroup var options: ClientOptions
    @Option(help: "A relay's HTTP/2 URL, in chain order (repeatable; at most 4).") var relay: [String] = []
    @Option(help: "The relay's HTTP/3 URL, kept for Apple's devices but not used (no QUIC here).") var http3: String?
    @Option(help: "A DNS-over-HTTPS resolver reached through the relay, for the names of relayed connections.") var doh: String?
    @Option(help: "A file of header fields added to every CONNECT request, one 'Name: value' a line (values stay off the command line).") var headerFile: String?
    @Option(help: "A PEM public key (openssl pkey -pubout) the relay's certificate must carry (repeatable): a pin instead of the CA check.") var publicKey: [String] = []
    @Option(help: "A PEM file with the client certificate, its chain and key, mode 600, presented to the relays; netextd reads it.") var clientIdentity: String?
    @Option(help: "A Privacy Pass issuer (https://HOST[:PORT]) whose tokens answer the relays' PrivateToken challenges: one fresh token a connection.") var privacyPassIssuer: String?
    @Flag(help: "Read the issuer's credential (its Bearer token) from standard input, one line; it goes to netextd's secret store, never onto a command line.") var privacyPassTokenStdin = false
    @Option(help: "A JSON file holding the whole relay settings (instead of the options above).") var settings: String?
    @Option(help: "Names within this domain go through the relays (repeatable).") var matchDomain: [String] = []
    @Option(help: "Names within this domain never go through the relays (repeatable).") var excludeDomain: [String] = []
    @Option(help: "This exact name goes through the relays (repeatable).") var matchFqdn: [String] = []
    @Option(help: "This exact name never goes through the relays (repeatable).") var excludeFqdn: [String] = []
    @Flag(help: "When the relay's resolver fails, resolve with the machine's resolver (default: the connection fails).") var allowDnsFailover = false
    @Option(help: "Per-app relays: only this app's connections go through the relays (repeatable; an app identifier, as netext app bind takes). Without it, every program's.")
    var bindApp: [String] = []
    @Option(help: "The name shown to people.") var name: String?
    @Flag(help: "Enable the relays now.") var enable = false

    func run() async throws {
        try await reportingFailures {
            var settings = try makeSettings()
            if let privacyPassIssuer { settings.privacyPassIssuerURL = privacyPassIssuer }
            if privacyPassTokenStdin, settings.privacyPassIssuerURL == nil { throw UsageError("--privacy-pass-token-stdin goes with --privacy-pass-issuer URL") }
            let credential = privacyPassTokenStdin ? try StandardInput.readSecretLine(option: "--privacy-pass-token-stdin", what: "credential") : nil
            try await options.withClient { client in
                var manager = try await RelayManager.shared(client: client)
                // A credential stored before stays (netextd keeps it when none is given).
                if settings.privacyPassIssuerURL != nil, credential == nil, manager.relaySettings.privacyPassTokenReference == nil {
                    throw UsageError("--privacy-pass-token-stdin is required with an issuer: its credential is read from standard input, never from the command line")
                }
                manager.relaySettings = settings
                if let name { manager.localizedDescription = name }
                if enable { manager.isEnabled = true }
                try await manager.saveToPreferences(password: credential)
                if options.json { try options.printJSON(manager.configuration) } else {
                    let chain = settings.relays.compactMap(\.http2RelayURL).joined(separator: " → ")
                    print("configured relays \(manager.localizedDescription) (\(manager.id.uuidString)): \(chain)\(manager.isEnabled ? ", enabled" : "")")
                }
            }
        }
    }

    private func makeSettings() throws -> RelayProtocol {
        if let settings {
            let perRelay = !relay.isEmpty || http3 != nil || doh != nil || headerFile != nil || !publicKey.isEmpty || clientIdentity != nil
            if perRelay || !bindApp.isEmpty {
                throw UsageError("--settings holds the relays and the apps: give it alone, without --relay, --http3, --doh, --header-file, --public-key, --client-identity or --bind-app")
            }
            guard let data = FileManager.default.contents(atPath: settings) else { throw UsageError("--settings: cannot read \(settings)") }
            do { return try JSONDecoder().decode(RelayProtocol.self, from: data) } catch {
                throw NetExtError.invalid("--settings \(settings): \(JSONDecodingText.describe(error, data: data))")
            }
        }
        if relay.isEmpty { throw UsageError("name at least one relay with --relay URL (or give --settings FILE)") }
        if http3 != nil && relay.count > 1 { throw UsageError("--http3 is for a single relay; for a chain give --settings FILE") }
        let headers = try headerFile.map(RelayHeaderFile.read) ?? [:]
        let keys = try publicKey.map(RelayPublicKeyFile.read)
        let identity = clientIdentity.map { $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
        let hops = relay.map {
            RelayHop(http3RelayURL: http3, http2RelayURL: $0, dnsOverHTTPSURL: doh, additionalHTTPHeaderFields: headers,
                     rawPublicKeys: keys, identityReference: identity)
        }
        let apps = try bindApp.map { text throws(NetExtError) in try AppRule(matchSigningIdentifier: try AppIdentifier(text)) }
        return RelayProtocol(
            relays: hops, matchDomains: matchDomain, excludedDomains: excludeDomain, matchFQDNs: matchFqdn,
            excludedFQDNs: excludeFqdn, allowsDNSFailover: allowDnsFailover, appRules: apps)
    }
}

/// Turns the app's relay configuration on or off.
enum RelaySwitch {
    static func set(_ enabled: Bool, options: ClientOptions) async throws {
        try await ConfigurationSwitch.set(
            enabled, options: options, what: "relays",
            missing: "no relays are configured for \(options.app); run `netext relay configure` first"
        ) { client throws(NetExtError) in try await RelayManager.shared(client: client) }
    }
}

struct RelayEnableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Enable your app's relays.")
    @OptionGroup var options: ClientOptions
    func run() async throws { try await RelaySwitch.set(true, options: options) }
}

struct RelayDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Disable your app's relays.")
    @OptionGroup var options: ClientOptions
    func run() async throws { try await RelaySwitch.set(false, options: options) }
}

struct RelayShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show your app's relays and which connections they take.",
        discussion: "With --host NAME, also says whether a connection to NAME would go through the relays or directly.")
    @OptionGroup var options: ClientOptions
    @Option(help: "A host name to check against the match and excluded domains (repeatable).") var host: [String] = []

    func run() async throws {
        try await reportingFailures {
            let (manager, status) = try await options.withClient { client in
                let manager = try await RelayManager.shared(client: client)
                guard manager.configuration.revision > 0 else {
                    throw NetExtError.invalid("no relays are configured for \(options.app); run `netext relay configure` first")
                }
                return (manager, try await manager.connection.statusInfo())
            }
            let settings = manager.relaySettings
            if options.json {
                let decisions = host.map { RelayHostDecision(host: $0, throughRelays: settings.routesThroughRelays(host: $0)) }
                try options.printJSON(RelayShowOutput(configuration: manager.configuration, status: status, hosts: decisions.isEmpty ? nil : decisions))
                return
            }
            print("relays \(manager.localizedDescription) (\(manager.id.uuidString)): \(manager.isEnabled ? "enabled, \(StatusText.name(status.status))" : "disabled")")
            if let error = status.lastDisconnectError { print("last error:  \(error.message)") }
            RelayText.describe(settings).forEach { print($0) }
            for name in host {
                print("\(name): \(settings.routesThroughRelays(host: name) ? "through the relays" : "direct")")
            }
        }
    }
}

/// What `netext relay show --json` prints.
struct RelayShowOutput: Encodable {
    var configuration: Configuration
    var status: StatusInfo
    var hosts: [RelayHostDecision]?
}

struct RelayHostDecision: Encodable {
    var host: String
    var throughRelays: Bool
}

/// Relay settings as people read them; header values are never printed.
enum RelayText {
    static func describe(_ settings: RelayProtocol) -> [String] {
        var lines: [String] = []
        for (index, relay) in settings.relays.enumerated() {
            let role = settings.relays.count == 1 ? "relay:      " : index == 0 ? "relay 1:    " : "relay \(index + 1):    "
            lines.append("\(role) \(relay.http2RelayURL ?? "?")\(index > 0 ? " (reached through relay \(index))" : "")")
            if let url = relay.http3RelayURL { lines.append("  HTTP/3:     \(url) (kept, not used: no QUIC here)") }
            if let doh = relay.dnsOverHTTPSURL { lines.append("  DoH:        \(doh)") }
            if !relay.additionalHTTPHeaderFields.isEmpty {
                lines.append("  headers:    \(relay.additionalHTTPHeaderFields.keys.sorted().joined(separator: ", ")) (values not shown)")
            }
            if !relay.rawPublicKeys.isEmpty { lines.append("  pinned keys: \(relay.rawPublicKeys.count)") }
            if let identity = relay.identityReference { lines.append("  identity:   \(identity)") }
        }
        if let issuer = settings.privacyPassIssuerURL {
            lines.append("tokens:      Privacy Pass from \(issuer)\(settings.privacyPassTokenReference == nil ? " (no credential stored)" : " (credential stored)")")
        }
        let matching = settings.matchDomains + settings.matchFQDNs
        lines.append("takes:       " + (matching.isEmpty ? "every connection" : matching.joined(separator: ", ")))
        let excluded = settings.excludedDomains + settings.excludedFQDNs
        if !excluded.isEmpty { lines.append("excluded:    " + excluded.joined(separator: ", ")) }
        lines.append("DNS failover: \(settings.allowsDNSFailover ? "to the machine's resolver" : "none (the connection fails)")")
        lines.append("apps:        " + (settings.isPerApp ? settings.appRules.map(\.matchSigningIdentifier.description).joined(separator: ", ") + " (per-app relays)" : "every program"))
        return lines
    }
}

/// Reads `Name: value` lines (RFC 9110 §5 field syntax) for `--header-file`.
enum RelayHeaderFile {
    static func read(_ path: String) throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw UsageError("--header-file: cannot read \(path) as UTF-8 text")
        }
        var fields: [String: String] = [:]
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let colon = trimmed.firstIndex(of: ":"), colon != trimmed.startIndex else {
                throw UsageError("--header-file \(path), line \(index + 1): expected 'Name: value'")
            }
            let name = String(trimmed[..<colon])
            if fields[name] != nil { throw UsageError("--header-file \(path), line \(index + 1): '\(name)' appears twice") }
            fields[name] = trimmed[trimmed.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }
}

/// Reads a PEM `PUBLIC KEY` (a SubjectPublicKeyInfo, RFC 7468 §13) into its base64 DER.
enum RelayPublicKeyFile {
    static func read(_ path: String) throws -> String {
        guard let text = FileManager.default.contents(atPath: path).flatMap({ String(data: $0, encoding: .utf8) }) else {
            throw UsageError("--public-key: cannot read \(path)")
        }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let begin = lines.firstIndex(of: "-----BEGIN PUBLIC KEY-----"),
              let end = lines[begin...].firstIndex(of: "-----END PUBLIC KEY-----") else {
            throw UsageError("--public-key \(path): no '-----BEGIN PUBLIC KEY-----' block (make one with `openssl pkey -pubout`)")
        }
        let body = lines[(begin + 1)..<end].joined()
        guard let der = Data(base64Encoded: body) else { throw UsageError("--public-key \(path): the PEM block is not base64") }
        return der.base64EncodedString()
    }
}
