import EncryptedDNS
import Foundation
import Logging
import NetExtCore
import NIOPosix

/// Relay configurations (`RelayProtocol`, Apple's `NERelayManager`): netextd runs each enabled
/// one as a transparent proxy of the built-in relay provider (`com.netext.relay`,
/// `netext-relay-provider`), which asks for the flows of the configuration's names and carries
/// them through its relays — or, bound to apps, as an app proxy of it (`com.netext.relay.per-app`). No app has to start anything: an enabled relay configuration is in
/// force, unless it has on-demand rules, which then decide (as a VPN's do).
extension SessionManager {
    /// What runs a relay configuration: the same configuration (id, owner, name, switches,
    /// rules) as a transparent proxy of the built-in provider, its settings in the provider's
    /// configuration under `relay`, and under `caFile` the CAs of `$NETEXT_RELAY_CA_FILE` (a
    /// lab's) when set. Any other configuration is returned as it is.
    static func runnable(_ configuration: Configuration, environment: [String: String] = ProcessInfo.processInfo.environment) -> Configuration {
        guard case .relay(let settings) = configuration.protocolConfiguration else { return configuration }
        var providerConfiguration: [String: JSONValue] = [:]
        if let data = try? JSONEncoder().encode(settings), let value = try? JSONDecoder().decode(JSONValue.self, from: data) {
            providerConfiguration["relay"] = value
        }
        if let caFile = environment["NETEXT_RELAY_CA_FILE"], !caFile.isEmpty { providerConfiguration["caFile"] = .string(caFile) }
        let firstRelay = settings.relays.first?.http2RelayURL.flatMap { try? RelayURL(parsing: $0) }
        var runnable = configuration
        let serverAddress = firstRelay.map { "\($0.host):\($0.port)" } ?? "relay"
        if settings.isPerApp {
            // Per-app relays: an app proxy of the bound apps (every flow of theirs goes to the
            // provider, which carries those the relays do not take directly).
            runnable.protocolConfiguration = .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: RelayProtocol.perAppProviderBundleIdentifier, providerType: .appProxy, serverAddress: serverAddress,
                providerConfiguration: providerConfiguration, perAppUUID: configuration.id.uuidString, appRules: settings.appRules))
        } else {
            runnable.protocolConfiguration = .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: RelayProtocol.providerBundleIdentifier, providerType: .transparentProxy,
                serverAddress: serverAddress, providerConfiguration: providerConfiguration))
        }
        return runnable
    }

    /// The start options of a relay configuration: `options` and, under
    /// `relayIdentities`, each relay's client identity read from its `identityReference` (the
    /// provider runs as nobody and cannot read a key file only root may). A file that others
    /// may read, or that cannot be read, fails the start naming it; and under
    /// `relayPrivacyPassToken` the Privacy Pass issuer's credential from the secret store
    /// (`secret`: the store's lookup). Never stored or logged.
    static func relayStartOptions(
        _ settings: RelayProtocol, options: [String: JSONValue], secret: ((String) throws(NetExtError) -> String?)? = nil
    ) throws(NetExtError) -> [String: JSONValue] {
        var options = options
        if settings.privacyPassIssuerURL != nil {
            guard let reference = settings.privacyPassTokenReference, let token = try secret?(reference), !token.isEmpty else {
                throw .invalid("the relays' Privacy Pass issuer has no credential; give one with `netext relay configure --privacy-pass-issuer URL --privacy-pass-token-stdin`")
            }
            options["relayPrivacyPassToken"] = .string(token)
        }
        var identities: [String: JSONValue] = [:]
        for (index, relay) in settings.relays.enumerated() {
            guard let path = relay.identityReference else { continue }
            var status = stat()
            guard stat(path, &status) == 0, let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw .invalid("relays[\(index)].identityReference: cannot read \(path)")
            }
            guard status.st_mode & 0o077 == 0 else {
                throw .invalid("relays[\(index)].identityReference: \(path) may be read by its group or others (mode \(String(status.st_mode & 0o777, radix: 8))); it holds a private key: chmod 600")
            }
            identities[String(index)] = .string(text)
        }
        guard !identities.isEmpty else { return options }
        options["relayIdentities"] = .object(identities)
        return options
    }

    /// A relay configuration was saved or removed: an enabled one without on-demand rules is
    /// started (a disabled or removed one is stopped by ``configurationChanged(_:removed:)``),
    /// and a running one whose settings changed is started again with them.
    func relayChanged(_ configuration: Configuration, removed: Bool, previous: Configuration?) async {
        guard case .relay = configuration.protocolConfiguration, !removed, configuration.isEnabled, !Self.hasOnDemandRules(configuration) else { return }
        let status = statusInfo(for: configuration).status
        if status.isActive, let previous, previous.protocolConfiguration == Self.runnable(configuration).protocolConfiguration { return }
        if status.isActive { await stop(configuration, reason: .configurationDisabled) }
        do {
            _ = try await start(configuration, options: [:], password: nil)
        } catch {
            logger.error("relays could not be put in force", metadata: ["configuration": "\(LogText.quoted(configuration.localizedDescription))", "error": "\(error.message)"])
        }
    }

    /// At start: the enabled relay configurations without on-demand rules are put in force.
    public func restoreRelays(_ configurations: [Configuration]) async {
        for configuration in configurations {
            guard case .relay = configuration.protocolConfiguration else { continue }
            await relayChanged(configuration, removed: false, previous: nil)
        }
    }

    /// The relay settings a runnable configuration (``runnable(_:environment:)``) carries, nil
    /// for any other configuration.
    static func relaySettings(ofRunnable configuration: Configuration) -> RelayProtocol? {
        guard case .tunnelProvider(let provider) = configuration.protocolConfiguration,
              provider.providerBundleIdentifier == RelayProtocol.providerBundleIdentifier || provider.providerBundleIdentifier == RelayProtocol.perAppProviderBundleIdentifier,
              let value = provider.providerConfiguration["relay"], let data = try? JSONEncoder().encode(value) else { return nil }
        return try? JSONDecoder().decode(RelayProtocol.self, from: data)
    }

    /// A running relay configuration with a DNS-over-HTTPS URL (``RelayProtocol/dnsOverHTTPSURL``)
    /// has the names it takes resolved there: netextd's resolver reaches the server through the
    /// relays (each connection a flow handed to the provider, carried to the server's name; the
    /// last relay looks it up), so neither the names nor the server's name go to the local
    /// network's resolver. The server's certificate is checked against the system's CAs, or
    /// `NETEXT_RELAY_CA_FILE` where set (a lab's). Per-app relays have a resolver of their own
    /// (``startAppRelayResolver(_:dispatcher:)``).
    func startRelayResolver(_ configuration: Configuration, dispatcher: AppProxyFlowDispatcher) {
        guard let settings = Self.relaySettings(ofRunnable: configuration), !settings.isPerApp, let url = settings.dnsOverHTTPSURL else { return }
        do throws(NetExtError) {
            try dns.applyRelayResolver(
                try Self.relayDoHServers(url, dispatcher: dispatcher), matchDomains: settings.matchDomains + settings.matchFQDNs, for: configuration.id)
        } catch {
            logger.error("the relays' DNS server cannot be used; their names are resolved by the machine's resolver", metadata: [
                "configuration": "\(LogText.quoted(configuration.localizedDescription))", "error": "\(error.message)",
            ])
        }
    }

    /// Per-app relays with a DNS-over-HTTPS URL: a resolver of netextd's on loopback, to which
    /// the steering sends the bound apps' DNS queries, asks the relays' server through them for
    /// the names the relays take (and the machine's resolver for the rest). nil: the
    /// configuration has none, or it could not start (logged; the apps' queries go as sent).
    func startAppRelayResolver(_ configuration: Configuration, dispatcher: AppProxyFlowDispatcher) -> FlowSteering.LoopbackResolver? {
        guard let settings = Self.relaySettings(ofRunnable: configuration), settings.isPerApp, let url = settings.dnsOverHTTPSURL else { return nil }
        do throws(NetExtError) {
            return try dns.openAppRelayResolver(
                try Self.relayDoHServers(url, dispatcher: dispatcher), matchDomains: settings.matchDomains + settings.matchFQDNs,
                excludedDomains: settings.excludedDomains + settings.excludedFQDNs, for: configuration.id)
        } catch {
            logger.error("the relays' DNS server cannot be used; the bound apps' names are resolved by the machine's resolver", metadata: [
                "configuration": "\(LogText.quoted(configuration.localizedDescription))", "error": "\(error.message)",
            ])
            return nil
        }
    }

    /// The relays' DoH server at `url` reached through `dispatcher`'s provider: one connection
    /// per core, as for the system DNS settings' servers.
    private static func relayDoHServers(_ url: String, dispatcher: AppProxyFlowDispatcher) throws(NetExtError) -> EncryptedDNSServerSet {
        let environment = ProcessInfo.processInfo.environment
        let trust = environment["NETEXT_RELAY_CA_FILE"].flatMap { $0.isEmpty ? nil : DNSServerTrust(caFile: $0) } ?? .system
        let opener: DNSOverHTTPSUpstream.ConnectedSocketOpener = { [weak dispatcher] host, port in
            guard let dispatcher else { throw NetExtError(.connectionFailed, "the relays have stopped") }
            return try dispatcher.openResolverConnection(toHost: host, port: UInt16(port))
        }
        do {
            let connections = try MultiThreadedEventLoopGroup.singleton.makeIterator().map { loop in
                try DNSOverHTTPSUpstream(url: url, through: opener, description: "through the relays", trust: trust, eventLoop: loop) as any EncryptedDNSUpstream
            }
            return EncryptedDNSServerSet(servers: [connections])
        } catch let error as NetExtError {
            throw error
        } catch {
            throw NetExtError(.configurationInvalid, "the relays' DNS server \(url): \(error)")
        }
    }
}
