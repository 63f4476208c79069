import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// `netext filter …`: the content filter.
struct FilterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "filter",
        abstract: "Create, enable and watch the content filter (flow verdicts from a data provider).",
        subcommands: [FilterCreateCommand.self, EnableCommand.self, DisableCommand.self, FilterStatusCommand.self, FilterLogCommand.self])
}

struct FilterCreateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Create (or replace) your app's content filter configuration.")
    @OptionGroup var options: ClientOptions
    @Option(help: "The name shown to people.") var name: String
    @Option(help: "The data provider's bundle identifier (a filter-data manifest).") var provider: String
    @Option(help: "The control provider's bundle identifier (a filter-control manifest), if any.") var controlProvider: String?
    @Option(help: "The organization named on the block page.") var organization: String?
    @Option(name: .customLong("config"), help: "A vendorConfiguration entry for the providers, key=value (repeatable; values are strings).") var vendorConfiguration: [String] = []
    @Option(help: "A rules file for the reference school filter (one host name, address or http:// URL prefix a line); stored as vendorConfiguration.rules.") var rules: String?
    @Option(help: "The block page's request-access link (http, https or mailto URL).") var requestAccessUrl: String?
    @Option(help: "The request-access link's text.") var requestAccessText: String?
    @Flag(help: "Drop flows while the data provider is unavailable (default: let them pass).") var failClosed = false
    @Flag(help: "Enable the filter now.") var enable = false

    func run() async throws {
        try await reportingFailures {
            var vendor = try KeyValue.parse(vendorConfiguration, option: "--config")
            if let rules {
                let text: String
                do { text = try String(contentsOfFile: rules, encoding: .utf8) } catch {
                    throw NetExtError.readWrite("--rules: cannot read \(rules): \(error.localizedDescription)")
                }
                do throws(NetExtError) { _ = try FilterRules(text: text) } catch { throw NetExtError.invalid("--rules \(rules): \(error.message)") }
                let lines = text.split(separator: "\n").map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "" }
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                vendor["rules"] = .array(lines.map(JSONValue.string))
            }
            try await options.withClient { client in
                var manager = try await FilterManager.shared(client: client, defaultDataProvider: provider)
                manager.localizedDescription = name
                manager.isEnabled = enable
                manager.providerConfiguration = ContentFilterProtocol(
                    filterDataProviderBundleIdentifier: provider, filterControlProviderBundleIdentifier: controlProvider, organization: organization, vendorConfiguration: vendor, failClosed: failClosed,
                    requestAccessURL: requestAccessUrl, requestAccessText: requestAccessText)
                try await manager.saveToPreferences()
                if options.json { try options.printJSON(manager.configuration) } else {
                    print("created filter \(manager.localizedDescription) (\(manager.id.uuidString))\(manager.isEnabled ? ", enabled" : "")")
                }
            }
        }
    }
}

struct FilterStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the content filter's state and counters.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let status = try await options.withClient { client in try await client.call(.getFilterStatus, expecting: FilterStatus.self) }
            if options.json { try options.printJSON(status); return }
            guard status.state != .off else {
                print("content filter: off")
                return
            }
            let counters = status.counters
            print("content filter: \(status.state.rawValue) — \(status.name ?? "?") (\(status.dataProvider ?? "?"), \(status.failClosed ? "fails closed" : "fails open"))")
            print("  provider pid: \(status.providerPID.map(String.init) ?? "none"), restarts: \(status.providerRestarts)")
            if let control = status.controlProvider {
                print("  control provider: \(control), pid \(status.controlProviderPID.map(String.init) ?? "none")")
            }
            print("  flows: \(counters.flowsAsked) judged, \(counters.flowsAllowed) allowed, \(counters.flowsDropped) dropped, \(counters.decidedByFailurePolicy) by failure policy; \(status.trackedFlows) tracked")
            print("  block pages served: \(counters.blockPagesServed); packets queued: \(counters.packetsQueued), malformed: \(counters.malformedPackets)")
            if let latency = status.verdictLatency {
                print("  verdict latency: p50 \(latency.p50Microseconds) µs, p99 \(latency.p99Microseconds) µs (last \(latency.samples) flows)")
            }
            if let error = status.lastError { print("  last error: \(error)") }
        }
    }
}

struct FilterLogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "log", abstract: "Show the content filter's latest verdicts (root or the admin group).")
    @OptionGroup var options: ClientOptions
    @Option(help: "How many entries, newest last.") var limit = 50

    func run() async throws {
        try await reportingFailures {
            let entries = try await options.withClient { client in
                try await client.call(.getFilterLog(limit: limit), expecting: FilterLogResult.self).entries
            }
            if options.json { try options.printJSON(entries); return }
            let formatter = ISO8601DateFormatter()
            let rows = entries.map { entry in
                [formatter.string(from: entry.date), entry.verdict.rawValue, entry.flow.direction.rawValue, entry.flow.transport.rawValue,
                 entry.flow.remoteEndpoint, entry.flow.url ?? entry.flow.remoteHostname ?? "-",
                 entry.flow.sourceApplication?.summary ?? "-", entry.reason + (entry.servedBlockPage == true ? ", block page" : "")]
            }
            print(TextTable.render(header: ["TIME", "VERDICT", "DIRECTION", "PROTO", "REMOTE", "HOST/URL", "OWNER", "BY"], rows: rows))
        }
    }
}
