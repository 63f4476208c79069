import Foundation
import NetExtCore
import NetExtIPC

/// Runs a provider inside the process netextd started: speaks the provider protocol over the
/// inherited socket (descriptor 3), calls the provider's lifecycle methods, and returns when the
/// provider has stopped (or failed to start). netextd passes descriptors on descriptor 4.
public enum ProviderHost {
    /// The descriptor netextd hands every provider.
    public static let controlDescriptor: Int32 = 3
    /// The descriptor on which netextd passes file descriptors (the TUN device) with SCM_RIGHTS.
    public static let descriptorPassingDescriptor: Int32 = 4

    /// Runs `provider` until it is stopped. Returns normally after a stop or a failed start;
    /// throws if netextd misbehaves or goes away.
    public static func run(_ provider: any TunnelProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor) async throws {
        let connection = try await FramedConnection.adopt(descriptor: descriptor)
        let session = ProviderSession(connection: connection)
        try await session.send(.hello(bundleIdentifier: bundleIdentifier, version: ControlProtocol.version))
        let decoder = ControlProtocol.makeDecoder()
        var started = false
        for await frame in connection.frames {
            let message: ProviderMessage
            do { message = try decoder.decode(ProviderMessage.self, from: Data(frame)) } catch {
                session.finish()
                throw NetExtError(.protocolError, "malformed message from netextd: \(error)")
            }
            switch message {
            case .start(let start) where !started:
                started = true
                let context = ProviderContext(configuration: start.configuration, password: start.password, session: session)
                // startTunnel runs beside this loop: it may call setTunnelNetworkSettings, whose
                // answer arrives here.
                Task {
                    do {
                        try await provider.startTunnel(options: start.options, context: context)
                        try await session.send(.started)
                    } catch {
                        let reported = (error as? NetExtError) ?? NetExtError(.connectionFailed, "\(error)")
                        try? await session.send(.failed(reported))
                        session.finish()
                    }
                }
            case .stop(let reason):
                Task {
                    await provider.stopTunnel(reason: reason)
                    try? await session.send(.stopped)
                    session.finish()
                }
            case .networkSettingsApplied, .networkSettingsRefused:
                session.answer(message)
            case .appMessage(let id, let data):
                let isStarted = started
                Task {
                    let reply = isStarted ? await provider.handleAppMessage(data) : nil
                    try? await session.send(.appMessageReply(id: id, data: reply))
                }
            default:
                session.finish()
                throw NetExtError(.protocolError, "unexpected message from netextd: \(message)")
            }
        }
        if !session.isFinished {
            throw NetExtError(.daemonUnavailable, "netextd closed the provider connection")
        }
    }
}
