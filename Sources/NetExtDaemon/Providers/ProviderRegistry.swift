import Foundation
import NetExtCore
import NetExtIPC

/// The registered providers: every `*.json` manifest in the providers directory, read afresh on
/// each look-up so that installing a provider needs no restart.
public struct ProviderRegistry: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    /// Valid manifests, and a line per file that was refused.
    public func load() -> ProviderList {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        var manifests: [ProviderManifest] = []
        var problems: [String] = []
        for name in names {
            let path = directory + "/" + name
            do throws(NetExtError) {
                let manifest = try Self.read(path: path)
                if let earlier = manifests.first(where: { $0.bundleIdentifier == manifest.bundleIdentifier }) {
                    problems.append("provider manifest \(path): bundle identifier '\(manifest.bundleIdentifier)' is already registered by an earlier file (executable \(earlier.executable))")
                    continue
                }
                manifests.append(manifest)
            } catch {
                problems.append(error.message)
            }
        }
        return ProviderList(providers: manifests, problems: problems)
    }

    /// The manifest for a bundle identifier, which must implement `extensionPoint`.
    public func manifest(for bundleIdentifier: String, extensionPoint: ProviderManifest.ExtensionPoint) throws(NetExtError) -> ProviderManifest {
        let list = load()
        guard let manifest = list.providers.first(where: { $0.bundleIdentifier == bundleIdentifier }) else {
            let candidates = list.providers.filter { $0.extensionPoint == extensionPoint }.map(\.bundleIdentifier)
            let registered = candidates.isEmpty ? "none is registered for \(extensionPoint.rawValue)" : "registered for \(extensionPoint.rawValue): \(candidates.joined(separator: ", "))"
            throw NetExtError(.providerFailed, "no provider is registered for bundle identifier '\(bundleIdentifier)'; \(registered) (see `netext providers`; manifests live in \(directory))")
        }
        guard manifest.extensionPoint == extensionPoint else {
            throw NetExtError(.providerFailed, "provider '\(bundleIdentifier)' implements \(manifest.extensionPoint.rawValue), not \(extensionPoint.rawValue)")
        }
        return manifest
    }

    /// Checks that every provider an enabled configuration names is registered for the right
    /// extension point, so `create --enable` and `enable` fail at once, naming what is
    /// registered, rather than at the next start.
    public func requireProviders(of configuration: Configuration) throws(NetExtError) {
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings):
            _ = try manifest(for: settings.providerBundleIdentifier, extensionPoint: settings.extensionPoint)
        case .contentFilter(let settings):
            _ = try manifest(for: settings.filterDataProviderBundleIdentifier, extensionPoint: .filterData)
            if let control = settings.filterControlProviderBundleIdentifier { _ = try manifest(for: control, extensionPoint: .filterControl) }
        case .urlFilter(let settings):
            _ = try manifest(for: settings.controlProviderBundleIdentifier, extensionPoint: .urlFilterControl)
        case .relay(let settings):
            // Relays run as a transparent proxy of the built-in relay provider; per-app relays
            // as an app proxy of it.
            if settings.isPerApp {
                _ = try manifest(for: RelayProtocol.perAppProviderBundleIdentifier, extensionPoint: .appProxy)
            } else {
                _ = try manifest(for: RelayProtocol.providerBundleIdentifier, extensionPoint: .transparentProxy)
            }
        case .personalVPN, .dnsSettings:
            break
        }
    }

    static func read(path: String) throws(NetExtError) -> ProviderManifest {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalid("provider manifest \(path) cannot be read")
        }
        let manifest = try ProviderManifest.parse(data, file: path)
        try requireSafe(path: path, what: "provider manifest")
        try requireSafe(path: manifest.executable, what: "provider executable", executable: true)
        return manifest
    }

    /// A manifest or executable that anyone could rewrite would let anyone run code as the
    /// provider's user: refuse group- or world-writable files.
    private static func requireSafe(path: String, what: String, executable: Bool = false) throws(NetExtError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .invalid("\(what) \(path) does not exist")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .invalid("\(what) \(path) is not a regular file") }
        guard info.st_mode & 0o022 == 0 else {
            throw .invalid("\(what) \(path) is writable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); refusing it")
        }
        if executable && info.st_mode & 0o111 == 0 {
            throw .invalid("\(what) \(path) is not executable")
        }
    }
}
