import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// `netext dns …`: the system DNS settings (Apple's NEDNSSettingsManager).
struct DNSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dns",
        abstract: "Configure the machine's DNS servers: in the clear, over TLS, over HTTPS or Oblivious DoH, for every name or a few domains.",
        subcommands: [DNSConfigureCommand.self, DNSEnableCommand.self, DNSDisableCommand.self, DNSStatusCommand.self])
}

struct DNSConfigureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "configure", abstract: "Create or change your app's DNS settings.",
        discussion: """
            Over TLS: --tls --server ADDRESS [--server-name NAME] (port 853). Over HTTPS: --https URL --server ADDRESS, \
            the URL's host reached at ADDRESS so that its name is never looked up in the clear. Oblivious DoH (RFC 9230): \
            --odoh-target URL --odoh-proxy URL --server ADDRESS (the proxy's) [--odoh-configs FILE]. Without any, the servers \
            are asked in the clear. Several --server are asked in order, or all at once with --parallel. With --match-domain only names within those domains use these servers.
            """)
    @OptionGroup var options: ClientOptions
    @Option(help: "A server's IP address, in order of preference (repeatable; at most 8).") var server: [String] = []
    @Flag(help: "DNS over TLS (RFC 7858) on port 853.") var tls = false
    @Option(help: "DNS over TLS: the name the servers' certificates carry.") var serverName: String?
    @Option(help: "DNS over HTTPS (RFC 8484): the URL queries are posted to, https://HOST[:PORT]/PATH.") var https: String?
    @Option(help: "Oblivious DoH (RFC 9230): the target's URL, https://HOST[:PORT]/PATH (its name goes to the proxy, never looked up).") var odohTarget: String?
    @Option(help: "Oblivious DoH: the proxy's URL, https://HOST[:PORT]/PATH, reached at --server.") var odohProxy: String?
    @Option(help: "Oblivious DoH: a file of the target's ObliviousDoHConfigs to pin (default: fetched through the proxy).") var odohConfigs: String?
    @Flag(help: "DNS over HTTPS: send queries as GET requests (?dns=, RFC 8484 §4.1) instead of POSTs.") var dohGet = false
    @Flag(help: "Ask every server at once and take the first answer (default: one after another, in order).") var parallel = false
    @Option(help: "DNS over TLS or HTTPS: a PEM file with the client certificate (and its chain) and private key, mode 600, sent when a server asks for one; netextd reads it.") var clientIdentity: String?
    @Option(help: "Only names within this domain use these servers (repeatable).") var matchDomain: [String] = []
    @Flag(help: "When no server answers, ask the machine's former servers in the clear (default: the query fails).") var allowCleartextFallback = false
    @Flag(help: "Block DNS (ports 53 and 853) from every program but netextd while these settings are enabled.") var prohibitOtherDns = false
    @Option(help: "The name shown to people.") var name: String?
    @Flag(help: "Enable the settings now.") var enable = false

    func run() async throws {
        try await reportingFailures {
            let oblivious = odohTarget != nil || odohProxy != nil
            if [tls, https != nil, oblivious].filter({ $0 }).count > 1 { throw UsageError("give one of --tls, --https or --odoh-target with --odoh-proxy") }
            if serverName != nil && !tls { throw UsageError("--server-name is for DNS over TLS (--tls)") }
            if oblivious && (odohTarget == nil || odohProxy == nil) { throw UsageError("Oblivious DoH needs both --odoh-target and --odoh-proxy") }
            if odohConfigs != nil && !oblivious { throw UsageError("--odoh-configs is for Oblivious DoH (--odoh-target, --odoh-proxy)") }
            if dohGet && https == nil { throw UsageError("--doh-get is for DNS over HTTPS (--https)") }
            if clientIdentity != nil && !tls && https == nil { throw UsageError("--client-identity is for DNS over TLS (--tls) or HTTPS (--https)") }
            let identity = clientIdentity.map { $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
            var configs: String?
            if let odohConfigs {
                guard let bytes = FileManager.default.contents(atPath: odohConfigs) else { throw UsageError("--odoh-configs: cannot read \(odohConfigs)") }
                configs = bytes.base64EncodedString()
            }
            let transport: DNSSettingsProtocol.Transport = tls ? .overTLS : https != nil ? .overHTTPS : oblivious ? .oblivious : .cleartext
            let settings = DNSSettingsProtocol(
                transport: transport, servers: server, serverName: serverName, serverURL: https ?? odohTarget, proxyURL: odohProxy,
                obliviousConfigs: configs, matchDomains: matchDomain, allowsCleartextFallback: allowCleartextFallback, prohibitsOtherDNS: prohibitOtherDns,
                httpMethod: dohGet ? .get : .post, serverSelection: parallel ? .parallel : .inOrder, identityReference: identity)
            try await options.withClient { client in
                var manager = try await DNSSettingsManager.shared(client: client)
                manager.dnsSettings = settings
                if let name { manager.localizedDescription = name }
                if enable { manager.isEnabled = true }
                try await manager.saveToPreferences()
                if options.json { try options.printJSON(manager.configuration) } else {
                    let extras = (dohGet ? ", GET" : "") + (parallel ? ", servers asked in parallel" : "") + (identity.map { ", client identity \($0)" } ?? "")
                    print("configured DNS settings \(manager.localizedDescription) (\(manager.id.uuidString)): \(DNSStatusText.transport(transport))\(extras)\(manager.isEnabled ? ", enabled" : "")")
                }
            }
        }
    }
}

/// Turns the app's DNS settings on or off.
enum DNSSwitch {
    static func set(_ enabled: Bool, options: ClientOptions) async throws {
        try await ConfigurationSwitch.set(
            enabled, options: options, what: "DNS settings",
            missing: "no DNS settings are configured for \(options.app); run `netext dns configure` first"
        ) { client throws(NetExtError) in try await DNSSettingsManager.shared(client: client) }
    }
}

struct DNSEnableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Enable your app's DNS settings.")
    @OptionGroup var options: ClientOptions
    func run() async throws { try await DNSSwitch.set(true, options: options) }
}

struct DNSDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Disable your app's DNS settings.")
    @OptionGroup var options: ClientOptions
    func run() async throws { try await DNSSwitch.set(false, options: options) }
}

struct DNSStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the DNS settings in force, their servers and the resolver's counters.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let status = try await options.withClient { client in try await client.call(GetDNSSettingsStatus()) }
            if options.json { try options.printJSON(status); return }
            guard status.state != .off else {
                print("DNS settings: off")
                return
            }
            print("DNS settings: \(status.state.rawValue) — \(status.name ?? "?")\(status.transport.map { " (\(DNSStatusText.transport($0)))" } ?? "")")
            if let problem = status.problem { print("  problem: \(problem)") }
            // Out of force by its rules: the machine resolves as before, nothing else to show.
            guard status.state != .paused else { return }
            for server in status.servers { print("  server: \(server)") }
            print("  names: \(status.matchDomains.isEmpty ? "all" : status.matchDomains.joined(separator: ", "))")
            if let machine = status.machineResolver { print("  the machine's names reach netextd through \(machine)") }
            if status.prohibitsOtherDNS { print("  other programs' DNS (ports 53 and 853): refused") }
            if status.state == .running && !status.stubInResolverFile { print("  a VPN's DNS servers take every name while it is up") }
            let counters = status.counters
            print("  queries: \(counters.bySettings) by these settings (\(counters.cacheHits) from the cache, \(counters.encryptedFailures) unanswered, \(counters.cleartextFallbacks) then in the clear), \(counters.toTunnel) to a VPN, \(counters.toSystem) to the former servers; \(counters.unanswered) SERVFAIL, \(counters.malformed) malformed")
        }
    }
}

enum DNSStatusText {
    static func transport(_ transport: DNSSettingsProtocol.Transport) -> String {
        switch transport {
        case .cleartext: "in the clear"
        case .overTLS: "over TLS"
        case .overHTTPS: "over HTTPS"
        case .oblivious: "Oblivious DoH"
        }
    }
}
