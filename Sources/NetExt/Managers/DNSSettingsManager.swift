import Foundation
import NetExtCore
import NetExtIPC

/// The app's system DNS settings, as Apple's `NEDNSSettingsManager.shared()`: the servers the
/// whole machine's names are resolved by — in the clear, over TLS (RFC 7858) or over HTTPS
/// (RFC 8484) — or, with match domains, just the names within them. netextd's resolver does
/// the encrypted talking and the resolver file points at it; a VPN's DNS wins where both would
/// answer. One DNS settings configuration is in force at a time: the one enabled last.
///
/// ```swift
/// var manager = try await DNSSettingsManager.shared(client: client)
/// manager.dnsSettings = .overHTTPS(servers: ["192.0.2.53"], serverURL: URL(string: "https://dns.example/dns-query")!)
/// manager.isEnabled = true
/// try await manager.saveToPreferences()
/// ```
public struct DNSSettingsManager: ConfigurationManager {
    /// The connection to netextd that loads and saves this configuration.
    public let client: ControlClient
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    public var configuration: Configuration

    /// Loads the app's DNS settings configuration, or returns a new unsaved one.
    public static func shared(client: ControlClient) async throws(NetExtError) -> DNSSettingsManager {
        DNSSettingsManager(client: client, configuration: try await sharedConfiguration(
            client: client, newSettings: .dnsSettings(DNSSettingsProtocol(servers: []))))
    }

    /// The settings (Apple's `dnsSettings`: `NEDNSSettings`, `NEDNSOverTLSSettings` or
    /// `NEDNSOverHTTPSSettings`, here one type with its `transport`).
    public var dnsSettings: DNSSettingsProtocol {
        get {
            if case .dnsSettings(let settings) = configuration.protocolConfiguration { return settings }
            return DNSSettingsProtocol(servers: [])
        }
        set { configuration.protocolConfiguration = .dnsSettings(newValue) }
    }

    /// What the settings in force are doing: the servers as reached, and the resolver's counters.
    public func status() async throws(NetExtError) -> DNSSettingsStatus {
        try await client.call(GetDNSSettingsStatus())
    }
}

extension DNSSettingsProtocol {
    /// `NEDNSOverTLSSettings`: `servers` reached on port 853, their certificates carrying `serverName`.
    public static func overTLS(servers: [String], serverName: String?, matchDomains: [String] = []) -> DNSSettingsProtocol {
        DNSSettingsProtocol(transport: .overTLS, servers: servers, serverName: serverName, matchDomains: matchDomains)
    }

    /// `NEDNSOverHTTPSSettings`: queries posted to `serverURL`, whose host is reached at `servers`.
    public static func overHTTPS(servers: [String], serverURL: URL, matchDomains: [String] = []) -> DNSSettingsProtocol {
        DNSSettingsProtocol(transport: .overHTTPS, servers: servers, serverURL: serverURL.absoluteString, matchDomains: matchDomains)
    }

    /// Oblivious DNS over HTTPS (RFC 9230; NetExt's addition, Apple's settings have none): queries
    /// sealed to `targetURL`'s key and posted through `proxyURL`, whose host is reached at
    /// `servers`. The proxy sees this machine but no name, the target names but not the machine.
    /// `configs` pins the target's `ObliviousDoHConfigs`; nil fetches them through the proxy.
    public static func obliviousOverHTTPS(
        servers: [String], proxyURL: URL, targetURL: URL, configs: Data? = nil, matchDomains: [String] = []
    ) -> DNSSettingsProtocol {
        DNSSettingsProtocol(
            transport: .oblivious, servers: servers, serverURL: targetURL.absoluteString, proxyURL: proxyURL.absoluteString,
            obliviousConfigs: configs?.base64EncodedString(), matchDomains: matchDomains)
    }
}
