import Foundation
import NetExtCore
import NetExtIPC

/// The app's URL filter configuration, as Apple's `NEURLFilterManager.shared`: where the PIR
/// server, the Privacy Pass issuer and (NetExt's addition) the Oblivious HTTP relay are, the
/// credential that gets tokens, the control provider that fetches the prefilter, how often,
/// and whether to deny when no verdict is possible.
///
/// ```swift
/// var manager = try await URLFilterManager.shared(client: client)
/// try manager.setConfiguration(
///     pirServerURL: URL(string: "https://pir.example")!, pirPrivacyPassIssuerURL: URL(string: "https://issuer.example")!,
///     pirAuthenticationToken: "…", controlProviderBundleIdentifier: "com.example.urlfilter.control")
/// manager.relayURL = URL(string: "https://relay.example/relay")
/// manager.isEnabled = true
/// try await manager.saveToPreferences()
/// ```
public struct URLFilterManager: ConfigurationManager {
    /// The connection to netextd that loads, saves and starts this configuration.
    public let client: ControlClient
    /// The configuration as last loaded or saved, with the caller's unsaved changes.
    public var configuration: Configuration
    /// A credential set by `setConfiguration`, sent to netextd's secret store on the next save.
    var pendingToken: String?

    /// Loads the app's URL filter configuration, or returns a new unsaved one.
    public static func shared(client: ControlClient) async throws(NetExtError) -> URLFilterManager {
        URLFilterManager(client: client, configuration: try await sharedConfiguration(
            client: client,
            newSettings: .urlFilter(URLFilterProtocol(pirServerURL: "", pirPrivacyPassIssuerURL: "", controlProviderBundleIdentifier: ""))))
    }

    var settings: URLFilterProtocol {
        get {
            if case .urlFilter(let settings) = configuration.protocolConfiguration { return settings }
            return URLFilterProtocol(pirServerURL: "", pirPrivacyPassIssuerURL: "", controlProviderBundleIdentifier: "")
        }
        set { configuration.protocolConfiguration = .urlFilter(newValue) }
    }

    /// Sets the servers, credential and control provider (`setConfiguration(pirServerURL:…)`).
    public mutating func setConfiguration(
        pirServerURL: URL, pirPrivacyPassIssuerURL: URL, pirAuthenticationToken: String, controlProviderBundleIdentifier: String
    ) throws(NetExtError) {
        guard !pirAuthenticationToken.isEmpty else { throw .invalid("pirAuthenticationToken must not be empty") }
        var updated = settings
        updated.pirServerURL = pirServerURL.absoluteString
        updated.pirPrivacyPassIssuerURL = pirPrivacyPassIssuerURL.absoluteString
        updated.controlProviderBundleIdentifier = controlProviderBundleIdentifier
        settings = updated
        pendingToken = pirAuthenticationToken
    }

    /// The PIR server that answers whether a URL is in the block list.
    public var pirServerURL: URL? { URL(string: settings.pirServerURL) }
    /// The Privacy Pass issuer that gives tokens for the PIR server.
    public var pirPrivacyPassIssuerURL: URL? { URL(string: settings.pirPrivacyPassIssuerURL) }
    /// The `url-filter-control` provider that fetches the prefilter.
    public var controlProviderBundleIdentifier: String { settings.controlProviderBundleIdentifier }

    /// Seconds between prefilter fetches (default 86400, at least 2700).
    public var prefilterFetchInterval: TimeInterval {
        get { settings.prefilterFetchInterval }
        set { settings.prefilterFetchInterval = newValue }
    }

    /// Deny when no verdict is possible (default false: allow).
    public var shouldFailClosed: Bool {
        get { settings.shouldFailClosed }
        set { settings.shouldFailClosed = newValue }
    }

    /// The Oblivious HTTP relay every query and token request goes through (NetExt's addition;
    /// without one, netextd talks to the servers directly and they see the machine's address).
    public var relayURL: URL? {
        get { settings.relayURL.flatMap(URL.init(string:)) }
        set { settings.relayURL = newValue?.absoluteString }
    }

    /// Accept service URLs with a path, another port or plain http, as Apple does for an app
    /// installed from Xcode (NetExt's stand-in for that; default false). A deployment's URLs
    /// are host-only https, each service named by a host name alone, as Apple requires since iOS and macOS
    /// 26.4: `https://pir.example.net`, `https://issuer.example.net`.
    public var allowsDevelopmentURLs: Bool {
        get { settings.allowsDevelopmentURLs }
        set { settings.allowsDevelopmentURLs = newValue }
    }

    /// Saves, sending a credential given to `setConfiguration` to the secret store.
    public mutating func saveToPreferences() async throws(NetExtError) {
        let request = SaveConfiguration(configuration: configuration, password: pendingToken)
        configuration = try await client.call(request).configuration
        pendingToken = nil
    }

    /// The running filter's state and counters.
    public func status() async throws(NetExtError) -> URLFilterStatus {
        try await client.call(GetURLFilterStatus())
    }
}

/// The participation API for programs that make their own HTTP requests: ask netextd whether
/// a URL may load. The program learns that URL's verdict and nothing else — not the prefilter,
/// the database, or what other programs asked.
public enum URLFilter {
    /// `.allow`, `.deny`, or `.unknown` (no decision possible; `effective` in the full result
    /// says what the failure policy makes of it).
    public static func verdict(for url: URL, client: ControlClient) async throws(NetExtError) -> URLFilterVerdictResult.Verdict {
        try await check(url.absoluteString, client: client).verdict
    }

    /// The verdict with the failure policy applied.
    public static func check(_ url: String, client: ControlClient) async throws(NetExtError) -> URLFilterVerdictResult {
        try await client.call(GetURLFilterVerdict(url: url))
    }
}
