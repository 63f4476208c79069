import ArgumentParser
import Dispatch
import CommandLogging
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtTunnel
import TunnelProtocol

/// `netext-server`: the server side of NetExt's features, one subcommand per role.
public struct ServerCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "netext-server",
        abstract: "NetExt's servers: the tunnel server, the URL filter's PIR server, Privacy Pass issuer, Oblivious HTTP gateway and relay, Oblivious DoH target and proxy, the MASQUE relay, and key tools.",
        version: NetExtVersion.current,
        subcommands: [
            TunnelCommand.self, PIRCommand.self, IssuerCommand.self, ObliviousGatewayCommand.self, ObliviousRelayCommand.self,
            ObliviousDoHTargetCommand.self, ObliviousDoHProxyCommand.self, RelayCommand.self, GenerateKeyCommand.self, PublicKeyCommand.self,
        ])

    public init() {}
}

/// The error a server thread ended with, if any.
final class ServerFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var error: NetExtError?
    func set(_ error: NetExtError) { lock.lock(); self.error = error; lock.unlock() }
    func get() -> NetExtError? { lock.lock(); defer { lock.unlock() }; return error }
}

struct GenerateKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "genkey", abstract: "Print a new private key (base64).")
    func run() { print(TunnelKeys.base64(TunnelKeys.generatePrivateKey())) }
}

struct PublicKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pubkey", abstract: "Read a private key on standard input; print its public key.")
    func run() throws {
        guard let line = readLine(), let key = try? TunnelKeys.privateKey(base64: line) else {
            FileHandle.standardError.write(Data("netext-server: standard input must hold a 32-byte base64 private key\n".utf8))
            throw ExitCode(3)
        }
        print(TunnelKeys.base64(key.publicKey))
    }
}
