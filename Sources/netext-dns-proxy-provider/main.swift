// The reference DNS proxy provider: register it with a manifest (extension point dns-proxy)
// and netextd runs it, unprivileged, when a DNS proxy configuration names its bundle id.
import Foundation
import NetExt

ProviderExecutable.answerInformationalArguments(name: "netext-dns-proxy-provider", usage: """
    usage: netext-dns-proxy-provider   (started by netextd from a provider manifest)
    The reference DNS proxy: every program's DNS (UDP and TCP to port 53) answered over
    DNS-over-HTTPS to the server named by the configuration's doh-url and doh-address
    (ca-file: a PEM of the CAs trusted). Logs counts, never names. See docs/encrypted-dns.md.
    """)
let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "com.netext.dns-proxy"
do {
    try await ProviderHost.run(dnsProxy: DoHForwardingDNSProxy(), bundleIdentifier: bundleIdentifier)
} catch {
    FileHandle.standardError.write(Data("netext-dns-proxy-provider: \(error)\n".utf8))
    exit(1)
}
