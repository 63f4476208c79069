// The reference packet tunnel provider under one's own bundle identifier: netextd starts it from
// a manifest such as
//   {"bundleIdentifier": "com.example.vpn.tunnel", "extensionPoint": "packet-tunnel",
//    "executable": "/usr/local/libexec/example-tunnel-provider", "user": "example-vpn"}
// and configurations name it in providerBundleIdentifier; it talks to `netext-server tunnel`.
import Foundation
import NetExt
import NetExtTunnel

ProviderExecutable.answerInformationalArguments(name: "example-tunnel-provider", usage: """
    usage: example-tunnel-provider   (started by netextd from a packet-tunnel provider manifest)
    NetExt's reference tunnel to netext-server tunnel.
    """)
do {
    try await ProviderHost.run(
        ReferenceTunnelProvider(),
        bundleIdentifier: ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "com.example.vpn.tunnel")
} catch {
    FileHandle.standardError.write(Data("example-tunnel-provider: \(error)\n".utf8))
    exit(1)
}
