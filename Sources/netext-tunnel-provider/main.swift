// The reference packet tunnel provider: register it with a manifest (extension point
// packet-tunnel) and netextd runs it, unprivileged, when a configuration names its bundle id.
import Foundation
import NetExt
import NetExtTunnel

ProviderExecutable.answerInformationalArguments(name: "netext-tunnel-provider", usage: """
    usage: netext-tunnel-provider   (started by netextd from a packet-tunnel provider manifest)
    The reference packet tunnel provider: NetExt's tunnel protocol to netext-server tunnel.
    See docs/providers.md and docs/tunnel-server.md.
    """)
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "com.netext.tunnel"
do {
    try await ProviderHost.run(ReferenceTunnelProvider(), bundleIdentifier: bundleIdentifier)
} catch {
    FileHandle.standardError.write(Data("netext-tunnel-provider: \(error)\n".utf8))
    exit(1)
}
