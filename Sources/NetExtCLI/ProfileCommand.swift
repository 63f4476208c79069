import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

struct ProfileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Install, list and remove configuration profiles (.mobileconfig).",
        subcommands: [Install.self, List.self, Remove.self])

    struct Install: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Install a profile's VPN payloads (XML or binary property list).")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The .mobileconfig file.") var file: String

        func run() async throws {
            try await reportingFailures {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw NetExtError.invalid("cannot read profile file \(file)")
                }
                // Parse locally first so errors name the file even before the daemon is asked.
                do throws(NetExtError) {
                    _ = try ProfileParser.parse(data, owner: Owner(uid: 0, appIdentifier: options.app))
                } catch {
                    throw NetExtError.invalid("\(file): \(error.message)")
                }
                let client = try await options.connect()
                defer { client.close() }
                let summary = try await client.call(InstallProfile(data: data))
                if options.json { try options.printJSON(summary); return }
                print("installed profile \(summary.identifier) (\(summary.displayName)): \(summary.configurationIDs.count) configuration(s)")
                let configurations = try await client.call(ListConfigurations()).configurations
                for id in summary.configurationIDs {
                    if let configuration = configurations.first(where: { $0.id == id }) {
                        print("  \(configuration.localizedDescription) [\(configuration.kind.rawValue)] \(id.uuidString)\(configuration.isEnabled ? " enabled" : "")")
                    }
                }
                for skipped in summary.skippedPayloads {
                    print("  skipped \(skipped.payloadIdentifier) (\(skipped.payloadType)): \(skipped.reason)")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List installed profiles.")
        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await reportingFailures {
                let client = try await options.connect()
                defer { client.close() }
                let profiles = try await client.call(ListProfiles()).profiles
                if options.json { try options.printJSON(profiles); return }
                if profiles.isEmpty { print("No profiles installed."); return }
                print(TextTable.render(
                    header: ["IDENTIFIER", "NAME", "CONFIGURATIONS", "SKIPPED"],
                    rows: profiles.map { [$0.identifier, $0.displayName, "\($0.configurationIDs.count)", "\($0.skippedPayloads.count)"] }))
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a profile and every configuration it installed.")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The profile's PayloadIdentifier.") var identifier: String

        func run() async throws {
            try await reportingFailures {
                let client = try await options.connect()
                defer { client.close() }
                let removal = try await client.call(RemoveProfile(identifier: identifier))
                if options.json { try options.printJSON(removal); return }
                print("removed profile \(removal.identifier) and \(removal.removedConfigurationIDs.count) configuration(s)")
            }
        }
    }
}
