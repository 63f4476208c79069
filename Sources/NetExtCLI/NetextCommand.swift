import ArgumentParser
import Foundation
import NetExtCore

/// `netext`: manage NetExt configurations, connections and profiles through netextd.
public struct NetextCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "netext",
        abstract: "Manage NetExt configurations, connections and profiles.",
        discussion: "Every command talks to netextd over its control socket. Exit codes are listed in docs/cli.md.",
        version: NetExtVersion.current,
        subcommands: [
            ListCommand.self, ShowCommand.self, CreateCommand.self, CreatePersonalCommand.self, EnableCommand.self, DisableCommand.self,
            RemoveCommand.self, StartCommand.self, StopCommand.self, StatusCommand.self, MessageCommand.self, OnDemandCommand.self, ProxyEnvCommand.self,
            ProfileCommand.self, ProvidersCommand.self, FilterCommand.self, URLFilterCommand.self, DNSCommand.self, RelayCommand.self,
            AppCommand.self, AppsCommand.self, RunCommand.self, HotspotCommand.self, HTTPCommand.self,
        ])

    public init() {}

    /// Runs the command line: a closed standard output ends the command quietly instead of
    /// killing it (`netext status | head -1`).
    public static func runMain() async {
        StandardStreams.ignoreBrokenPipes()
        await main()
    }
}
