import ArgumentParser
import Foundation
import NetExtCore
import NetExtIPC
#if canImport(Glibc)
import Glibc
#endif

/// `netext app bind|unbind`: which tunnel carries an app's flows (or lets them bypass it).
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Bind apps to tunnels by the app their flows come from (per-app VPN).",
        subcommands: [AppBindCommand.self, AppUnbindCommand.self])
}

struct AppBindCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bind",
        abstract: "Send an app's flows into a per-app VPN (default), or with --exclude let them bypass a tunnel that takes everything else.",
        discussion: """
            An app is known by its identifier: the cgroup `netext run --app ID` launches it in, and the systemd units \
            desktops and Flatpak start it in (app-ID-*.scope, app-flatpak-ID-*.scope, …; --unit adds others, such as snap.firefox.*). \
            A socket keeps the cgroup it was created in: an app already running is steered once it is started again.             --domain limits a per-app VPN's app to destinations in those domains (Apple's matchDomains): its names in them are             resolved by the tunnel's DNS servers, and only the addresses they answered go through the tunnel.
            """)
    @OptionGroup var options: ClientOptions
    @Argument(help: "The app's identifier (reverse-DNS, such as org.mozilla.firefox).") var app: String
    @Option(help: "The tunnel configuration's name or id.", completion: ConfigurationNameCompletion.kind) var vpn: String
    @Flag(help: "Let the app bypass the tunnel instead (a tunnel that routes by destination).") var exclude = false
    @Option(help: "Only this executable (absolute path) may be launched as the app with netext run.") var path: String?
    @Option(help: "A systemd unit name pattern that is the app's too (repeatable).") var unit: [String] = []
    @Option(help: "Only destinations in this domain and its subdomains go through the per-app VPN (repeatable).") var domain: [String] = []

    func run() async throws {
        try await reportingFailures {
            let identifier = try AppIdentifier(app)
            let rule = try AppRule(
                matchSigningIdentifier: identifier, matchPath: path, matchDomains: domain, matchUnits: try unit.map { (text) throws(NetExtError) in try UnitNamePattern(text) })
            let saved = try await AppBinding.change(options: options, vpn: vpn, app: identifier) { settings throws(NetExtError) in
                if exclude {
                    guard domain.isEmpty else {
                        throw .invalid("--domain limits what a per-app VPN carries; an excluded app bypasses the tunnel for every destination (leave --domain out)")
                    }
                    guard !settings.isPerApp else {
                        throw .invalid("'\(vpn)' is a per-app VPN: it carries only the apps bound to it, so none needs excluding (leave --exclude out to bind one)")
                    }
                    settings.excludedAppRules.removeAll { $0.matchSigningIdentifier == identifier }
                    settings.excludedAppRules.append(rule)
                } else {
                    guard settings.isPerApp else {
                        throw .invalid("'\(vpn)' routes by destination; create a per-app VPN (netext create --per-app) to bind apps to, or bind with --exclude to let this app bypass it")
                    }
                    settings.appRules.removeAll { $0.matchSigningIdentifier == identifier }
                    settings.appRules.append(rule)
                }
            }
            if options.json { try options.printJSON(saved) } else {
                print(exclude ? "\(identifier) bypasses \(saved.localizedDescription)" : "\(identifier) is bound to \(saved.localizedDescription)")
            }
        }
    }
}

struct AppUnbindCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unbind", abstract: "Remove an app's binding from a tunnel.")
    @OptionGroup var options: ClientOptions
    @Argument(help: "The app's identifier.") var app: String
    @Option(help: "The tunnel configuration's name or id.", completion: ConfigurationNameCompletion.kind) var vpn: String

    func run() async throws {
        try await reportingFailures {
            let identifier = try AppIdentifier(app)
            let saved = try await AppBinding.change(options: options, vpn: vpn, app: nil) { settings throws(NetExtError) in
                let before = settings.appRules.count + settings.excludedAppRules.count
                settings.appRules.removeAll { $0.matchSigningIdentifier == identifier }
                settings.excludedAppRules.removeAll { $0.matchSigningIdentifier == identifier }
                if settings.appRules.count + settings.excludedAppRules.count == before {
                    throw .unknown("\(identifier) is not bound to '\(vpn)' (see netext apps)")
                }
            }
            if options.json { try options.printJSON(saved) } else { print("\(identifier) is no longer bound to \(saved.localizedDescription)") }
        }
    }
}

/// Load, change the tunnel's app rules, save with the loaded revision: the path an app takes.
enum AppBinding {
    /// `app`: refused if another configuration the caller sees binds it already.
    static func change(
        options: ClientOptions, vpn: String, app: AppIdentifier?, _ edit: (inout TunnelProviderProtocol) throws(NetExtError) -> Void
    ) async throws -> Configuration {
        try await options.withConfiguration(vpn, forChange: true) { client, loaded in
            guard case .tunnelProvider(var settings) = loaded.protocolConfiguration else {
                throw NetExtError.invalid("'\(vpn)' is a \(loaded.kind.rawValue) configuration; apps are bound to tunnel-provider VPNs")
            }
            if let app {
                let others = try await client.call(ListConfigurations()).configurations.filter { $0.id != loaded.id }
                for other in others {
                    guard case .tunnelProvider(let theirs) = other.protocolConfiguration else { continue }
                    if (theirs.appRules + theirs.excludedAppRules).contains(where: { $0.matchSigningIdentifier == app }) {
                        throw NetExtError.invalid("\(app) is bound to '\(other.localizedDescription)' already; unbind it there first (netext app unbind \(app) --vpn '\(other.localizedDescription)')")
                    }
                }
            }
            try edit(&settings)
            var configuration = loaded
            configuration.protocolConfiguration = .tunnelProvider(settings)
            return try await client.call(SaveConfiguration(configuration: configuration)).configuration
        }
    }
}

/// `netext apps`: the bound apps, their tunnels and their live cgroups.
struct AppsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apps", abstract: "List the apps bound to enabled tunnels, how, and the cgroups they run in now.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let apps = try await options.withClient { client in try await client.call(ListApps()).apps }
            if options.json { return try options.printJSON(apps) }
            guard !apps.isEmpty else { return print("No apps are bound to an enabled tunnel.") }
            let rows = apps.map { app in
                let traffic = app.mode == .exclude ? "bypasses" : app.matchDomains.map { domains in
                    let learned = app.learnedDestinations ?? 0
                    return "through for " + domains.joined(separator: ", ") + " (\(learned) \(learned == 1 ? "address" : "addresses") answered)"
                } ?? "through"
                return [app.app, app.configurationName, traffic,
                 app.isConnected ? "connected" : "not connected", app.cgroups.isEmpty ? "-" : app.cgroups.joined(separator: " ")]
            }
            print(TextTable.render(header: ["APP", "VPN", "TRAFFIC", "VPN STATUS", "CGROUPS"], rows: rows))
        }
    }
}

/// `netext run --app ID -- command…`: runs a program as an app, its flows steered from its first
/// socket on.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a program as an app: netextd moves this process into the app's cgroup, then the program replaces it.",
        discussion: "Everything the program and its children open is steered as the app's: into the per-app VPN the app is bound to, or around the tunnel that excludes it.")
    @Option(name: .customLong("app"), help: "The app's identifier (reverse-DNS, such as org.mozilla.firefox); netextd is told it as the caller's too.") var appIdentifier: String
    @Flag(name: .long, help: "Say nothing on standard error before the program runs.") var quiet = false
    @Flag(name: .long, help: "Say where the program was placed as one JSON line on standard error (standard output is the program's).") var json = false
    @Option(name: .long, help: "netextd's control socket (default: $NETEXT_SOCKET or /run/netext/netextd.sock).") var socket: String?
    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments (after --).") var command: [String] = []

    func run() async throws {
        var words = command
        if words.first == "--" { words.removeFirst() }
        try await reportingFailures {
            guard let program = words.first else { throw UsageError("give the command to run after --") }
            let identifier = try AppIdentifier(appIdentifier)
            guard let executable = ExecutableSearch.resolve(program) else {
                throw NetExtError.invalid("'\(program)' is not an executable file (nor one on PATH)")
            }
            let options = try ClientOptions.parse(["--app", identifier.rawValue] + (socket.map { ["--socket", $0] } ?? []))
            let placement = try await options.withClient { client in
                try await client.call(PlaceInApp(app: identifier.rawValue, executable: executable))
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                StandardStreams.error(try encoder.encode(placement) + Data("\n".utf8))
            } else if !quiet {
                let how = placement.configurationName.map { name in placement.mode == .exclude ? "bypassing \(name)" : "through \(name)" } ?? "bound to no tunnel"
                StandardStreams.error(Data("netext: running \(program) as \(identifier) (\(how))\n".utf8))
            }
            var arguments = words.map { strdup($0) } + [nil]
            execv(executable, &arguments)
            throw NetExtError.invalid("cannot run \(executable): \(String(cString: strerror(errno)))")
        }
    }
}

/// Where a command word names a program: a path with `/` as given, else the first executable
/// of that name on `PATH`.
enum ExecutableSearch {
    static func resolve(_ word: String) -> String? {
        if word.contains("/") {
            let path = word.hasPrefix("/") ? word : FileManager.default.currentDirectoryPath + "/" + word
            return access(path, X_OK) == 0 ? URL(fileURLWithPath: path).standardizedFileURL.path : nil
        }
        let search = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in search.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(word)"
            var info = stat()
            if stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
