import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC
import Synchronization

struct StartCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Start a configuration's connection and wait until it is connected or failed.",
        discussion: "After two seconds without an answer it says what the connection is doing, on standard error, until it is connected or failed. With --timeout, a connection not up in time is stopped and the command fails (exit 75); without it, netextd's own start deadline (30 s) applies.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String
    @Option(help: "The user name to pass to the provider.") var username: String?
    @Flag(help: "Read a password from standard input (used for this start only, never stored).") var passwordStdin = false
    @Option(name: .customLong("option"), help: "A start option for the provider, key=value (repeatable).") var startOptions: [String] = []
    @Option(help: "Give up after this many seconds: the attempt is stopped and the command fails.") var timeout: Double?

    /// How long `start` waits quietly before it reports progress.
    static let quietPeriod: Duration = .seconds(2)

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 3600) { throw ValidationError("--timeout must be a number of seconds between 0 and 3600, not \(timeout)") }
    }

    func run() async throws {
        try await reportingFailures {
            var startOptions = try KeyValue.parse(self.startOptions, option: "--option")
            if let username { startOptions["username"] = .string(username) }
            if passwordStdin { startOptions["password"] = .string(try StandardInput.readSecretLine()) }
            let client = try await options.connect()
            defer { client.close() }
            // Status changes arrive while the start is under way; the reporter says them after
            // the quiet period, so a quick start prints nothing but its answer.
            let progress = StartProgress(reference: name, notifications: try await client.notifications(), quietPeriod: Self.quietPeriod)
            defer { progress.cancel() }
            let info: StatusInfo
            do {
                // One request after hello: netextd resolves the name.
                info = try await client.call(StartConnection(ConfigurationReference(name), options: startOptions), timeout: timeout.map { .milliseconds(Int($0 * 1000)) } ?? .seconds(90))
            } catch let error as NetExtError where error.code == .timedOut && timeout != nil {
                progress.cancel()
                let stopped = try? await client.call(StopConnection(ConfigurationReference(name)), timeout: .seconds(60))
                throw NetExtError(.timedOut, "\(stopped?.name ?? name) did not connect within \(StartProgress.seconds(timeout ?? 0)); the attempt was stopped (status \(StatusText.name(stopped?.status ?? .disconnected)))")
            }
            progress.cancel()
            if options.json { try options.printJSON(info) } else {
                print(StatusText.headline(info))
            }
            if info.status != .connected {
                throw CommandFailure(info.lastDisconnectError ?? NetExtError(.connectionFailed, "\(info.name) did not connect (status \(StatusText.name(info.status)))"))
            }
        }
    }
}

/// What `netext start` says while it waits: nothing for the quiet period, then the connection's
/// status as it changes, and every five seconds how long it has been, on standard error.
final class StartProgress: Sendable {
    private struct State {
        var latest: String
        var spoken = false
    }
    private final class Shared: Sendable {
        let state: Mutex<State>
        let started = ContinuousClock.now
        init(_ state: State) { self.state = Mutex(state) }
        var elapsed: String { StartProgress.seconds(Double((ContinuousClock.now - started).components.seconds)) }
    }
    private let watcher: Task<Void, Never>
    private let ticker: Task<Void, Never>

    init(reference: String, notifications: AsyncStream<ControlNotification>, quietPeriod: Duration) {
        let shared = Shared(State(latest: "\(reference): connecting"))
        watcher = Task {
            for await notification in notifications {
                guard case .statusChanged(let change) = notification,
                      change.current.name == reference || change.current.id.uuidString.caseInsensitiveCompare(reference) == .orderedSame else { continue }
                let line = "\(change.current.name): \(StatusText.name(change.current.status))"
                let speak = shared.state.withLock { state in
                    state.latest = line
                    return state.spoken
                }
                if speak && !Task.isCancelled { StandardStreams.error(Data("\(line) (\(shared.elapsed))\n".utf8)) }
            }
        }
        ticker = Task {
            var wait = quietPeriod
            while (try? await Task.sleep(for: wait)) != nil {
                let latest = shared.state.withLock { state in
                    state.spoken = true
                    return state.latest
                }
                StandardStreams.error(Data("\(latest)… (\(shared.elapsed))\n".utf8))
                wait = .seconds(5)
            }
        }
    }

    func cancel() {
        watcher.cancel()
        ticker.cancel()
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : String(format: "%.1f s", value)
    }
}

struct StopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stop", abstract: "Stop a configuration's connection and wait until it is disconnected.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String

    func run() async throws {
        try await reportingFailures {
            let info = try await options.withClient { client in
                try await client.call(StopConnection(ConfigurationReference(name)), timeout: .seconds(60))
            }
            if options.json { try options.printJSON(info) } else {
                print(StatusText.headline(info))
                if info.killSwitch == true {
                    StandardStreams.error(Data("\(info.name) includes all networks: traffic stays blocked until you disable it (netext disable '\(info.name)')\n".utf8))
                }
            }
        }
    }
}

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show connection status; with --watch, follow configuration and status changes as they happen.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "A configuration's name or id (default: all).", completion: ConfigurationNameCompletion.kind) var name: String?
    @Flag(help: "Keep running and print every change.") var watch = false
    @Option(help: "With --watch: exit after this many events.") var count: Int?
    @Option(help: "With --watch: exit after this many seconds.") var timeout: Double?

    func run() async throws {
        try await reportingFailures {
            let client = try await options.connect()
            defer { client.close() }
            let notifications = watch ? try await client.notifications() : nil
            // Status is public: netextd looks the name up among all configurations.
            let statuses = try await client.call(GetStatus(name.map(ConfigurationReference.init))).statuses
            let filter = name == nil ? nil : statuses.first?.id
            if options.json && !watch {
                try options.printJSON(statuses)
            } else if !options.json {
                var lines = statuses.isEmpty ? ["No configurations."] : []
                let now = Date()
                for status in statuses { lines += StatusText.block(status, now: now) }
                StandardStreams.out(Data((lines.joined(separator: "\n") + "\n").utf8))
            }
            guard let notifications else { return }
            StandardStreams.error(Data("watching for changes (Ctrl-C to stop)\n".utf8))
            try await follow(notifications, filter: filter)
        }
    }

    private func follow(_ notifications: AsyncStream<ControlNotification>, filter: UUID?) async throws {
        let limit = count
        let deadline = timeout
        let json = options.json
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var seen = 0
                for await notification in notifications {
                    let id: UUID
                    switch notification {
                    case .configurationChanged(let change): id = change.id
                    case .statusChanged(let change): id = change.current.id
                    }
                    if let filter, filter != id { continue }
                    let line = json
                        ? String(decoding: try ControlProtocol.makeEncoder().encode(NotificationEnvelope(notification)), as: UTF8.self)
                        : ConfigurationText.describe(notification)
                    // Unbuffered, so a reader of a pipe sees each event as it happens.
                    StandardStreams.out(Data((line + "\n").utf8))
                    seen += 1
                    if let limit, seen >= limit { return }
                }
                throw NetExtError(.daemonUnavailable, "netextd closed the connection")
            }
            if let deadline {
                group.addTask { try await Task.sleep(for: .milliseconds(Int(deadline * 1000))) }
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }
}

struct ProxyEnvCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy-env",
        abstract: "Print shell exports of the connected tunnels' HTTP/HTTPS proxies (eval \"$(netext proxy-env)\").",
        discussion: "Prints nothing when no connected tunnel sets a proxy.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let statuses = try await options.withClient { client in
                try await client.call(GetStatus()).statuses
            }
            guard let proxy = statuses.first(where: { $0.status == .connected && $0.proxy != nil })?.proxy else { return }
            print(ProxyEnvironment.exports(proxy))
        }
    }
}

/// The proxy environment variables programs honour (`http_proxy`, `https_proxy`, `no_proxy`,
/// lower and upper case).
enum ProxyEnvironment {
    static func variables(_ proxy: ProxySettings) -> [(String, String)] {
        var variables: [(String, String)] = []
        if let http = proxy.httpServer { variables += [("http_proxy", "http://\(http)"), ("HTTP_PROXY", "http://\(http)")] }
        if let https = proxy.httpsServer { variables += [("https_proxy", "http://\(https)"), ("HTTPS_PROXY", "http://\(https)")] }
        if !proxy.exceptionList.isEmpty {
            let list = proxy.exceptionList.joined(separator: ",")
            variables += [("no_proxy", list), ("NO_PROXY", list)]
        }
        return variables
    }

    static func exports(_ proxy: ProxySettings) -> String {
        variables(proxy).map { "export \($0.0)='\($0.1.replacingOccurrences(of: "'", with: ""))'" }.joined(separator: "\n")
    }

    static func summary(_ proxy: ProxySettings) -> String {
        [proxy.httpServer.map { "http \($0)" }, proxy.httpsServer.map { "https \($0)" }].compactMap { $0 }.joined(separator: ", ")
    }
}

struct MessageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "message",
        abstract: "Send a message to a running configuration's provider (its handleAppMessage) and print the answer.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String
    @Argument(help: "The message text (default: read standard input).") var text: String?

    func run() async throws {
        try await reportingFailures {
            let data = text.map { Data($0.utf8) } ?? StandardInput.readAll()
            let reply = try await options.withClient { client in
                try await client.call(SendProviderMessage(ConfigurationReference(name), data: data), timeout: .seconds(15))
            }
            if options.json {
                try options.printJSON(reply)
            } else if let answer = reply.data {
                StandardStreams.out(answer)
                if answer.last != UInt8(ascii: "\n") { StandardStreams.out(Data("\n".utf8)) }
            } else {
                StandardStreams.error(Data("(the provider sent no answer)\n".utf8))
            }
        }
    }
}
