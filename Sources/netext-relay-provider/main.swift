// The built-in relay client: register it with a manifest (extension point transparent-proxy,
// and again as com.netext.relay.per-app with extension point app-proxy) and netextd runs it,
// unprivileged, for relay configurations (a transparent proxy; bound to apps, an app proxy).
// Registered a third time as com.netext.relay.ip-tunnel (packet-tunnel), it is a packet
// tunnel over a relay's connect-ip (RFC 9484).
// See docs/relays.md.
import Foundation
import NetExt
import RelayProvider

ProviderExecutable.answerInformationalArguments(name: "netext-relay-provider", usage: """
    usage: netext-relay-provider   (started by netextd from a provider manifest)
    Carries the flows a relay configuration takes (its match domains, or every flow) through
    its chain of MASQUE relays over HTTP/2: TCP by CONNECT, UDP by connect-udp. The settings
    come from the configuration's providerConfiguration: "relay" (RelayProtocol's JSON) and
    optionally "caFile" (the CAs the relay's certificate must chain to). Registered as
    com.netext.relay.ip-tunnel (packet-tunnel), it is a packet tunnel over the relay's
    connect-ip instead: serverAddress the relay's URL, the password its token. See docs/relays.md.
    """)
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? RelayProtocol.providerBundleIdentifier
do {
    // Registered twice: as a transparent proxy (relays for every program) and as an app proxy
    // (per-app relays, com.netext.relay.per-app).
    if bundleIdentifier == ConnectIPTunnelProvider.bundleIdentifier {
        // A packet tunnel over the relay's connect-ip.
        try await ProviderHost.run(ConnectIPTunnelProvider(), bundleIdentifier: bundleIdentifier)
    } else if bundleIdentifier == RelayProtocol.perAppProviderBundleIdentifier {
        try await ProviderHost.run(appProxy: RelayProxyProvider(), bundleIdentifier: bundleIdentifier)
    } else {
        try await ProviderHost.run(transparentProxy: RelayProxyProvider(), bundleIdentifier: bundleIdentifier)
    }
} catch {
    FileHandle.standardError.write(Data("netext-relay-provider: \(error)\n".utf8))
    exit(1)
}
