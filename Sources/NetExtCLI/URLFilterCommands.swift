import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// `netext urlfilter …`: the privacy-preserving URL filter (docs/url-filter.md).
struct URLFilterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "urlfilter",
        abstract: "Configure, enable and query the URL filter (Bloom prefilter, private lookups through a relay).",
        subcommands: [
            URLFilterConfigureCommand.self, URLFilterEnableCommand.self, URLFilterDisableCommand.self,
            URLFilterStatusCommand.self, URLFilterCheckCommand.self,
        ])
}

struct URLFilterConfigureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "configure", abstract: "Create or change your app's URL filter configuration.")
    @OptionGroup var options: ClientOptions
    @Option(help: "The PIR server's URL as the gateway knows it: https://HOST (e.g. https://pir.example.net).") var pirServer: String
    @Option(help: "The Privacy Pass issuer's URL as the gateway knows it: https://HOST (e.g. https://issuer.example.net).") var issuer: String
    @Flag(help: "Read the credential the issuer accepts (pirAuthenticationToken) from standard input, one line; it goes to netextd's secret store and never onto a command line.") var tokenStdin = false
    @Option(help: "The control provider's bundle identifier (a url-filter-control manifest).") var controlProvider: String
    @Option(help: "The Oblivious HTTP relay's URL (e.g. http://relay.example:8083/relay).") var relay: String?
    @Option(help: "Seconds between prefilter fetches (at least 2700).") var fetchInterval: Double = URLFilterProtocol.defaultPrefilterFetchInterval
    @Option(help: "The name shown to people.") var name: String?
    @Flag(help: "Deny URLs the filter cannot decide (default: allow).") var failClosed = false
    @Flag(help: "Accept service URLs with a path, a port or plain http, as Apple does for apps installed from Xcode (labs, development). Without it both must be https://HOST with no path, as Apple requires since iOS 26.4.") var development = false
    @Flag(help: "Enable the filter now.") var enable = false

    func run() async throws {
        try await reportingFailures {
            guard let pirURL = URL(string: pirServer), let issuerURL = URL(string: issuer) else { throw UsageError("--pir-server and --issuer must be URLs") }
            guard tokenStdin else { throw UsageError("--token-stdin is required: the issuer's credential is read from standard input, never from the command line") }
            let token = try StandardInput.readSecretLine(option: "--token-stdin", what: "credential")
            try await options.withClient { client in
                var manager = try await URLFilterManager.shared(client: client)
                try manager.setConfiguration(pirServerURL: pirURL, pirPrivacyPassIssuerURL: issuerURL, pirAuthenticationToken: token,
                                             controlProviderBundleIdentifier: controlProvider)
                manager.relayURL = try relay.map { text throws(NetExtError) in
                    guard let url = URL(string: text) else { throw NetExtError.invalid("--relay must be a URL, got '\(text)'") }
                    return url
                }
                manager.prefilterFetchInterval = fetchInterval
                manager.shouldFailClosed = failClosed
                manager.allowsDevelopmentURLs = development
                if let name { manager.localizedDescription = name }
                if enable { manager.isEnabled = true }
                try await manager.saveToPreferences()
                if options.json { try options.printJSON(manager.configuration) } else {
                    print("configured URL filter \(manager.localizedDescription) (\(manager.id.uuidString))\(manager.isEnabled ? ", enabled" : "")")
                }
            }
        }
    }
}

/// Turns the app's URL filter on or off.
enum URLFilterSwitch {
    static func set(_ enabled: Bool, options: ClientOptions) async throws {
        try await ConfigurationSwitch.set(
            enabled, options: options, what: "URL filter",
            missing: "no URL filter is configured for \(options.app); run `netext urlfilter configure` first"
        ) { client throws(NetExtError) in try await URLFilterManager.shared(client: client) }
    }
}

struct URLFilterEnableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Enable your app's URL filter.")
    @OptionGroup var options: ClientOptions
    func run() async throws { try await URLFilterSwitch.set(true, options: options) }
}

struct URLFilterDisableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "disable", abstract: "Disable your app's URL filter.")
    @OptionGroup var options: ClientOptions
    func run() async throws { try await URLFilterSwitch.set(false, options: options) }
}

struct URLFilterStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the URL filter's state and counters.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let status = try await options.withClient { client in try await client.call(GetURLFilterStatus()) }
            if options.json { try options.printJSON(status); return }
            guard status.state != .off else {
                print("URL filter: off")
                return
            }
            print("URL filter: \(status.state.rawValue) — \(status.name ?? "?") (\(status.controlProvider ?? "?"), \(status.failClosed ? "fails closed" : "fails open"))")
            print("  PIR server: \(status.pirServerURL ?? "?"), relay: \(status.relayURL ?? "none (direct)")")
            if let bits = status.prefilterBits, let hashes = status.prefilterHashes, let fetched = status.prefilterFetchedAt {
                print("  prefilter: \(bits) bits, \(hashes) hashes, fetched \(ISO8601DateFormatter().string(from: fetched)); \(status.prefilterFetches) fetches, every \(Int(status.prefilterFetchInterval ?? 0)) s")
            } else {
                print("  prefilter: none yet (\(status.prefilterFetches) fetches)")
            }
            let counters = status.counters
            print("  verdicts: \(counters.prefilterNegative) by prefilter, \(counters.privateLookups) private lookups, \(counters.cached) cached, \(counters.unknown) undecided; \(counters.denied) denied")
            print("  tokens: \(status.tokensAvailable) available, \(status.tokensFetched) fetched; \(status.cachedVerdicts) verdicts cached")
            if let error = status.lastError { print("  last error: \(error)") }
        }
    }
}

struct URLFilterCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Ask the URL filter about URLs; prints 'URL allow|deny|unknown' per URL.",
        discussion: "Exit status 0 when every URL is allowed, 1 when one is denied (an undecided URL counts as its failure policy says).")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The URLs to check.") var urls: [String]

    func run() async throws {
        var denied = false
        try await reportingFailures {
            try await options.withClient { client in
                var results: [String: URLFilterVerdictResult] = [:]
                for url in urls {
                    let result = try await URLFilter.check(url, client: client)
                    results[url] = result
                    if result.effective == .deny { denied = true }
                    if !options.json {
                        print("\(url) \(result.verdict.rawValue)" + (result.verdict == .unknown ? " (\(result.effective.rawValue) by policy)" : ""))
                    }
                }
                if options.json { try options.printJSON(results) }
            }
        }
        if denied { throw ExitCode(1) }
    }
}
