import Foundation
import NetExtCore
import NetExtIPC

/// Runs a provider inside the process netextd started: speaks the provider protocol over the
/// inherited socket (descriptor 3), calls the provider's lifecycle methods, and returns when the
/// provider has stopped or netextd went away.
public enum ProviderHost {
    /// The descriptor netextd hands every provider.
    public static let controlDescriptor: Int32 = 3

    /// Runs `provider` until it is stopped. Returns normally after a stop; throws if netextd
    /// misbehaves or disappears.
    public static func run(_ provider: any TunnelProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor) async throws {
        let connection = try await FramedConnection.adopt(descriptor: descriptor)
        defer { connection.close() }
        try await connection.send(ProviderMessage.hello(bundleIdentifier: bundleIdentifier, version: ControlProtocol.version))
        let decoder = ControlProtocol.makeDecoder()
        var started = false
        for await frame in connection.frames {
            let message: ProviderMessage
            do { message = try decoder.decode(ProviderMessage.self, from: Data(frame)) } catch {
                throw NetExtError(.protocolError, "malformed message from netextd: \(error)")
            }
            switch message {
            case .start(let start) where !started:
                started = true
                let context = ProviderContext(configuration: start.configuration, password: start.password)
                do {
                    try await provider.startTunnel(options: start.options, context: context)
                    try await connection.send(ProviderMessage.started)
                } catch {
                    let reported = (error as? NetExtError) ?? NetExtError(.connectionFailed, "\(error)")
                    try await connection.send(ProviderMessage.failed(reported))
                    return
                }
            case .stop(let reason):
                await provider.stopTunnel(reason: reason)
                try await connection.send(ProviderMessage.stopped)
                return
            default:
                throw NetExtError(.protocolError, "unexpected message from netextd: \(message)")
            }
        }
        throw NetExtError(.daemonUnavailable, "netextd closed the provider connection")
    }
}
