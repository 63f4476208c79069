import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// Options every `netext` subcommand takes.
struct ClientOptions: ParsableArguments {
    @Flag(name: .long, help: "Print machine-readable JSON instead of text.")
    var json = false

    @Option(name: .long, help: "netextd's control socket (default: $NETEXT_SOCKET or /run/netext/netextd.sock).")
    var socket: String?

    @Option(name: .long, help: "The app identifier to act as; configurations belong to the app that created them.")
    var app = "com.netext.cli"

    func connect() async throws -> ControlClient {
        do {
            return try await ControlClient.connect(appIdentifier: app, socketPath: socket ?? ControlClient.defaultSocketPath)
        } catch {
            throw CommandFailure(error)
        }
    }

    /// Connects, runs `body` with the client, and closes the connection.
    func withClient<T>(_ body: (ControlClient) async throws -> T) async throws -> T {
        let client = try await connect()
        defer { client.close() }
        return try await body(client)
    }

    /// Connects, loads the configuration named (or with the id) `name` — one request, netextd
    /// resolves the name among those the caller can see — and runs `body`. With `forChange`, a
    /// caller netextd says may not change configurations is told so before any name is looked
    /// up (netextd refuses the change itself in any case).
    func withConfiguration<T>(_ name: String, forChange: Bool = false, _ body: (ControlClient, Configuration) async throws -> T) async throws -> T {
        try await withClient { client in
            if forChange && !client.hello.mayModify {
                throw NetExtError.permissionDenied("changing a configuration needs root or membership of netextd's admin group (uid \(client.hello.uid) is neither)")
            }
            return try await body(client, try await client.call(LoadConfiguration(ConfigurationReference(name))).configuration)
        }
    }

    /// Prints a value as JSON (sorted keys, pretty).
    func printJSON<Value: Encodable>(_ value: Value) throws {
        let encoder = ControlProtocol.makeEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}

/// A failure the CLI reports on stderr with the exit code of its error code.
struct CommandFailure: Error, CustomStringConvertible {
    let error: NetExtError
    init(_ error: NetExtError) { self.error = error }
    var description: String { "netext: \(error.message) [\(error.code.name)]" }

    /// The documented exit code of each error code (see docs/cli.md).
    static func exitCode(for code: NetExtError.Code) -> Int32 {
        switch code {
        case .configurationInvalid: 3
        case .configurationDisabled: 4
        case .connectionFailed: 5
        case .configurationStale: 6
        case .configurationReadWriteFailed: 7
        case .configurationUnknown: 8
        case .providerFailed: 9
        case .permissionDenied: 10
        case .daemonUnavailable: 69
        case .timedOut: 75
        case .protocolError: 76
        }
    }
}

/// Arguments that parse but make no sense together or name no valid choice: reported like the
/// argument parser's own errors, exit 64 (EX_USAGE, sysexits.h), nothing sent to netextd.
struct UsageError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { "netext: \(message) (see --help)" }
    static let exitCode: Int32 = 64
}

/// Runs a CLI body, turning NetExt errors into a message on stderr and the matching exit code.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let usage as UsageError {
        StandardStreams.error(Data((usage.description + "\n").utf8))
        throw ExitCode(UsageError.exitCode)
    } catch let failure as CommandFailure {
        StandardStreams.error(Data((failure.description + "\n").utf8))
        throw ExitCode(CommandFailure.exitCode(for: failure.error.code))
    } catch let error as NetExtError {
        StandardStreams.error(Data((CommandFailure(error).description + "\n").utf8))
        throw ExitCode(CommandFailure.exitCode(for: error.code))
    }
}
