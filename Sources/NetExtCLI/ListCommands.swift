import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the configurations you can see, with their status.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let client = try await options.connect()
            defer { client.close() }
            let configurations = try await client.call(ListConfigurations()).configurations
            let statuses = try await client.call(GetStatus()).statuses
            let byID = Dictionary(statuses.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            if options.json {
                try options.printJSON(configurations.map { ListedConfiguration(configuration: $0, status: byID[$0.id]?.status ?? .invalid) })
                return
            }
            if configurations.isEmpty {
                print("No configurations. Install a profile with `netext profile install FILE` or create one with `netext create`.")
                return
            }
            let rows = configurations.map { configuration in
                [configuration.localizedDescription, configuration.kind.rawValue, configuration.isEnabled ? "yes" : "no",
                 StatusText.name(byID[configuration.id]?.status ?? .invalid), configuration.id.uuidString]
            }
            print(TextTable.render(header: ["NAME", "KIND", "ENABLED", "STATUS", "ID"], rows: rows))
        }
    }
}

/// One line of `netext list --json`.
struct ListedConfiguration: Encodable {
    var configuration: Configuration
    var status: ConnectionStatus
    /// `show` only: the connection in full (traffic, and an active tunnel's details).
    var connection: StatusInfo?
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one configuration in full.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The configuration's name or id.", completion: ConfigurationNameCompletion.kind) var name: String

    func run() async throws {
        try await reportingFailures {
            let (configuration, status) = try await options.withConfiguration(name) { client, configuration in
                (configuration, try await VPNConnection(client: client, configurationID: configuration.id).statusInfo())
            }
            if options.json {
                try options.printJSON(ListedConfiguration(configuration: configuration, status: status.status, connection: status))
                return
            }
            print(ConfigurationText.describe(configuration, status: status))
        }
    }
}

struct ProvidersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "providers", abstract: "List the registered provider manifests.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let client = try await options.connect()
            defer { client.close() }
            let list = try await client.call(ListProviders())
            if options.json {
                try options.printJSON(list)
                return
            }
            if list.providers.isEmpty { print("No providers registered.") } else {
                print(TextTable.render(
                    header: ["BUNDLE IDENTIFIER", "EXTENSION POINT", "USER", "EXECUTABLE"],
                    rows: list.providers.map { [$0.bundleIdentifier, $0.extensionPoint.rawValue, $0.user, $0.executable] }))
            }
            for problem in list.problems { print("refused: \(problem)") }
        }
    }
}
