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
        subcommands: [FilterCreateCommand.self, EnableCommand.self, DisableCommand.self, FilterStatusCommand.self, FilterLogCommand.self, FilterPromptCommand.self])
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
    @Option(help: "A rules file for the reference personal firewall (allow|deny PROGRAM DESTINATION a line); stored as vendorConfiguration.rules.") var firewallRules: String?
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
            if let firewallRules {
                guard rules == nil else { throw UsageError("give --rules (school filter) or --firewall-rules (personal firewall), not both") }
                let text: String
                do { text = try String(contentsOfFile: firewallRules, encoding: .utf8) } catch {
                    throw NetExtError.readWrite("--firewall-rules: cannot read \(firewallRules): \(error.localizedDescription)")
                }
                let parsed: FirewallRules
                do throws(NetExtError) { parsed = try FirewallRules(text: text) } catch {
                    throw NetExtError.invalid("--firewall-rules \(firewallRules): \(error.message)")
                }
                vendor["rules"] = .array(parsed.rules.map { JSONValue.string($0.description) })
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
            let status = try await options.withClient { client in try await client.call(GetFilterStatus()) }
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
            if counters.flowsReadingData > 0 {
                print("  flows read as data: \(counters.flowsReadingData) (\(counters.dataQuestions) data calls, \(counters.packetsOfDataFlows) packets)")
            }
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
                try await client.call(GetFilterLog(limit: limit)).entries
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

/// `netext filter prompt`: the personal firewall's open questions — which program wants to reach
/// which destination — listed, answered one by one, or asked on the terminal.
struct FilterPromptCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prompt",
        abstract: "List and answer the personal firewall's questions (root or the admin group).",
        discussion: """
            Without arguments, lists the open questions. `netext filter prompt ID allow|deny` answers one: a rule for \
            that program and destination goes to the top of the firewall's rules. With --ask, each open question is put \
            on the terminal (a line of input: allow, deny or skip) until none is left.
            """)
    @OptionGroup var options: ClientOptions
    @Argument(help: "The question to answer.") var id: Int?
    @Argument(help: "allow or deny.") var answer: String?
    @Flag(help: "Make the rule cover everything the program does, not just this destination.") var anyDestination = false
    @Flag(help: "Ask each open question on the terminal.") var ask = false

    func validate() throws {
        if id != nil, answer == nil || !["allow", "deny"].contains(answer!) { throw ValidationError("answer with allow or deny") }
        if ask, id != nil { throw ValidationError("--ask answers the questions one by one; give no question number") }
    }

    func run() async throws {
        try await reportingFailures {
            try await options.withClient { client in
                let status = try await client.call(GetFilterStatus())
                guard let configurationID = status.configurationID, status.state != .off else {
                    throw NetExtError(.configurationDisabled, "no content filter is running")
                }
                func send(_ command: FirewallPromptCommand) async throws -> FirewallPromptReply {
                    let data = try JSONEncoder().encode(command)
                    let reply = try await client.call(SendProviderMessage(.id(configurationID), data: data))
                    guard let body = reply.data, let decoded = try? JSONDecoder().decode(FirewallPromptReply.self, from: body) else {
                        throw NetExtError(.protocolError, "the filter's control provider does not answer prompts (is it the personal firewall?)")
                    }
                    if let error = decoded.error { throw NetExtError(.configurationInvalid, error) }
                    return decoded
                }
                if let id, let answer {
                    let reply = try await send(.answer(id: id, allow: answer == "allow", anyDestination: anyDestination))
                    if options.json { try options.printJSON(reply) } else { print("added rule: \(reply.addedRule ?? "?")") }
                } else if ask {
                    var skipped: Set<Int> = []
                    while let prompt = try await send(.list).prompts.first(where: { !skipped.contains($0.id) }) {
                        print("\(Self.describe(prompt)) — allow, deny or skip? ", terminator: "")
                        guard let line = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() else { return }
                        switch line {
                        case "allow", "a", "y", "yes", "deny", "d", "n", "no":
                            let allow = ["allow", "a", "y", "yes"].contains(line)
                            let reply = try await send(.answer(id: prompt.id, allow: allow, anyDestination: anyDestination))
                            print("added rule: \(reply.addedRule ?? "?")")
                        default:
                            skipped.insert(prompt.id)
                        }
                    }
                    print("no open questions")
                } else {
                    let prompts = try await send(.list).prompts
                    if options.json { try options.printJSON(prompts); return }
                    guard !prompts.isEmpty else {
                        print("no open questions")
                        return
                    }
                    let formatter = ISO8601DateFormatter()
                    let rows = prompts.map { prompt in
                        [String(prompt.id), prompt.program ?? "?", prompt.uid.map { "uid \($0)" } ?? "-", "\(prompt.destination) \(prompt.transport.rawValue)/\(prompt.remotePort)",
                         String(prompt.flows), formatter.string(from: prompt.firstAsked)]
                    }
                    print(TextTable.render(header: ["ID", "PROGRAM", "USER", "DESTINATION", "FLOWS", "FIRST ASKED"], rows: rows))
                }
            }
        }
    }

    static func describe(_ prompt: FirewallPrompt) -> String {
        "#\(prompt.id): \(prompt.program ?? "an unknown program")\(prompt.uid.map { " (uid \($0))" } ?? "") wants \(prompt.destination) \(prompt.transport.rawValue)/\(prompt.remotePort)"
    }
}
