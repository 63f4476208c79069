// The reference app proxy provider: register it with a manifest (extension point app-proxy)
// and netextd runs it, unprivileged, when an app proxy configuration names its bundle id.
import Foundation
import NetExt
import NetExtProxies

ProviderExecutable.answerInformationalArguments(name: "netext-proxy-provider", usage: """
    usage: netext-proxy-provider [transparent]   (started by netextd from a provider manifest)
    The reference app proxy: the bound apps' TCP flows through a SOCKS 5 server or an HTTP
    proxy (CONNECT) named by the configuration's server address, or straight on (upstream
    direct). With the argument "transparent" (a transparent-proxy manifest), the flows its
    network rules name, from every program. See docs/app-proxy.md.
    """)
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "com.netext.proxy"
do {
    if CommandLine.arguments.dropFirst().first == "transparent" {
        try await ProviderHost.run(transparentProxy: ForwardingProxyProvider(), bundleIdentifier: bundleIdentifier)
    } else {
        try await ProviderHost.run(appProxy: ForwardingProxyProvider(), bundleIdentifier: bundleIdentifier)
    }
} catch {
    FileHandle.standardError.write(Data("netext-proxy-provider: \(error)\n".utf8))
    exit(1)
}
