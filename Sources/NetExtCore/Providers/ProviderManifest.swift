import Foundation

/// A registered provider (Apple's app extension): which bundle identifier it answers to,
/// which extension point it implements, and how netextd starts it.
///
/// Manifests are JSON files in netextd's providers directory, one provider per file:
/// ```json
/// {"bundleIdentifier": "com.example.tunnel", "extensionPoint": "packet-tunnel",
///  "executable": "/usr/libexec/example-tunnel", "user": "nobody"}
/// ```
public struct ProviderManifest: Sendable, Hashable, Codable {
    /// The extension points a provider can implement.
    public enum ExtensionPoint: String, Sendable, Hashable, Codable, CaseIterable {
        case packetTunnel = "packet-tunnel"
        case appProxy = "app-proxy"
        case transparentProxy = "transparent-proxy"
        case filterData = "filter-data"
        case filterControl = "filter-control"
        case urlFilterControl = "url-filter-control"
        case dnsProxy = "dns-proxy"
        /// A hotspot helper (NEHotspotHelper): evaluates, authenticates to and maintains the
        /// sessions of networks behind captive portals, answering netextd's commands.
        case hotspotHelper = "hotspot-helper"

        /// Whether netextd hands the provider flows (sockets) rather than packets: app,
        /// transparent and DNS proxies.
        public var takesFlows: Bool { self == .appProxy || self == .transparentProxy || self == .dnsProxy }
    }

    public var bundleIdentifier: String
    public var extensionPoint: ExtensionPoint
    /// Absolute path of the provider's executable.
    public var executable: String
    /// Extra arguments passed to the executable.
    public var arguments: [String]
    /// The user the provider runs as; never root unless the manifest says so explicitly.
    public var user: String
    /// Apple's `NETestAppMapping`, for development: per-app VPN `VPNUUID` → the apps a per-app
    /// VPN with that UUID carries besides its stored `appRules` (on Apple's systems an Info.plist
    /// key honoured for development builds only; here the manifest, which only root installs).
    public var testAppMapping: [String: [AppIdentifier]]

    public init(
        bundleIdentifier: String, extensionPoint: ExtensionPoint, executable: String, arguments: [String] = [], user: String = "nobody",
        testAppMapping: [String: [AppIdentifier]] = [:]
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.extensionPoint = extensionPoint
        self.executable = executable
        self.arguments = arguments
        self.user = user
        self.testAppMapping = testAppMapping
    }

    private enum CodingKeys: String, CodingKey { case bundleIdentifier, extensionPoint, executable, arguments, user, testAppMapping }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleIdentifier = try container.decode(String.self, forKey: .bundleIdentifier)
        let point = try container.decode(String.self, forKey: .extensionPoint)
        guard let extensionPoint = ExtensionPoint(rawValue: point) else {
            throw DecodingError.dataCorruptedError(
                forKey: .extensionPoint, in: container,
                debugDescription: "unknown extension point '\(point)' (expected one of: \(ExtensionPoint.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        self.extensionPoint = extensionPoint
        executable = try container.decode(String.self, forKey: .executable)
        arguments = try container.decodeIfPresent([String].self, forKey: .arguments) ?? []
        user = try container.decodeIfPresent(String.self, forKey: .user) ?? "nobody"
        testAppMapping = try container.decodeIfPresent([String: [AppIdentifier]].self, forKey: .testAppMapping) ?? [:]
    }


    /// Decodes and checks a manifest file's contents; errors name the file and the key.
    public static func parse(_ data: Data, file: String) throws(NetExtError) -> ProviderManifest {
        let manifest: ProviderManifest
        do {
            manifest = try JSONDecoder().decode(ProviderManifest.self, from: data)
        } catch {
            throw .invalid("provider manifest \(file): \(JSONDecodingText.describe(error, data: data))")
        }
        try UnknownJSONKeys.refuse(in: data, decoded: manifest, file: "provider manifest \(file)")
        guard manifest.executable.hasPrefix("/") else {
            throw .invalid("provider manifest \(file): key 'executable': '\(manifest.executable)' must be an absolute path")
        }
        guard !manifest.bundleIdentifier.isEmpty, !manifest.user.isEmpty else {
            throw .invalid("provider manifest \(file): 'bundleIdentifier' and 'user' must not be empty")
        }
        return manifest
    }
}
