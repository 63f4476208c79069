import Foundation
import NetExtCore

/// A DNS proxy, as Apple's `NEDNSProxyProvider`: every program's DNS flows — UDP and TCP to
/// port 53, each app socket and server its own flow — come to `handleNewFlow` and
/// `handleNewUDPFlow`, and the provider answers them itself: over its own encrypted channel, from
/// its own records, or by refusing names. Its own queries are never taken. A flow it declines
/// (`false`) goes on to the server it was sent to, as if no proxy were there. A provider
/// configuration of type `TunnelProviderProtocol.ProviderType.dnsProxy` runs it
/// (`netext create --provider-type dns-proxy`, or a `com.apple.dnsProxy.managed` profile
/// payload), with ``ProviderHost/run(dnsProxy:bundleIdentifier:descriptor:descriptorSocket:)``.
///
/// Destinations on the machine itself (a resolver listening on loopback) are not taken: where
/// the resolver file names one, the proxy sees that resolver's own queries instead.
public protocol DNSProxyProvider: AppProxyProvider {}

extension AppProxyContext {
    /// The machine's DNS settings as its resolver file states them (Apple's
    /// `NEDNSProxyProvider.systemDNSSettings`): the servers the machine's queries were going to,
    /// where a DNS proxy that only adds to them sends the rest. Empty when the file cannot be read.
    public var systemDNSSettings: DNSSettings {
        Self.systemDNSSettings(resolverFile: "/etc/resolv.conf")
    }

    static func systemDNSSettings(resolverFile path: String) -> DNSSettings {
        let text = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return ResolverFileText.settings(in: text)
    }
}
