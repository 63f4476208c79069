import ArgumentParser
import Foundation
import NetExt
import NetExtCore

/// `netext create-personal`: the app's personal VPN with the built-in IKEv2 client, as an app
/// would save it with `VPNManager` (Apple's `NEVPNManager` with `NEVPNProtocolIKEv2`). An app has
/// one personal VPN: running it again replaces the settings.
struct CreatePersonalCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create-personal",
        abstract: "Create or replace the app's personal VPN (built-in IKEv2 through strongSwan).",
        discussion: "Secrets come on standard input, one a line: the shared secret, then (with --username) the password.")
    @OptionGroup var options: ClientOptions
    @Option(help: "The name shown to people.") var name: String
    @Option(help: "The IKEv2 server's address or host name.") var server: String
    @Option(help: "The identity the server must prove (default: its address).") var remoteId: String?
    @Option(help: "The identity this machine claims (default: its address).") var localId: String?
    @Flag(help: "Read the shared secret from standard input (first line). Required.") var sharedSecretStdin = false
    @Option(help: "Authenticate this machine with EAP-MSCHAPv2 as this user (the server still proves itself with the shared secret).") var username: String?
    @Flag(help: "With --username: read the password from standard input (the line after the shared secret).") var passwordStdin = false
    @Flag(help: "Save it disabled.") var disabled = false

    func run() async throws {
        try await reportingFailures {
            guard sharedSecretStdin else {
                throw UsageError("--shared-secret-stdin is required: NetExt's IKEv2 client authenticates the server with a shared secret")
            }
            guard (username != nil) == passwordStdin else {
                throw UsageError("--username and --password-stdin go together (EAP-MSCHAPv2 needs both)")
            }
            let sharedSecret = try StandardInput.readSecretLine(option: "--shared-secret-stdin", what: "shared secret")
            let password = passwordStdin ? try StandardInput.readSecretLine() : nil
            let client = try await options.connect()
            defer { client.close() }
            var manager = try await VPNManager.shared(client: client, defaultServerAddress: server)
            manager.localizedDescription = name
            manager.isEnabled = !disabled
            manager.protocolConfiguration = IKEv2Protocol(
                serverAddress: server, remoteIdentifier: remoteId, localIdentifier: localId,
                authenticationMethod: .sharedSecret, useExtendedAuthentication: username != nil, username: username)
            try await manager.saveToPreferences(password: password, sharedSecret: sharedSecret)
            if options.json { try options.printJSON(manager.configuration) } else {
                print("saved personal VPN \(manager.localizedDescription) (\(manager.id.uuidString))\(manager.isEnabled ? ", enabled" : "")")
            }
        }
    }
}
