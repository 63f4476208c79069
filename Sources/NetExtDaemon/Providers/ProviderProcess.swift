import Foundation
import Synchronization
import NetExtTransport
import NetExtCore
import NetExtIPC
import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// A running provider: how it runs (a process, or in-process in tests) and the framed
/// connection on its control socket.
public final class ProviderProcess: Sendable {
    public let manifest: ProviderManifest
    public let connection: FramedConnection
    private let execution: any ProviderExecution
    /// netextd's end of the socketpair that carries file descriptors (the TUN device) to the
    /// provider's descriptor 4, with SCM_RIGHTS.
    private let descriptorSocket: Int32
    private let exited = Mutex(false)
    private let descriptorSocketClosed = Mutex(false)

    private init(execution: any ProviderExecution, manifest: ProviderManifest, connection: FramedConnection, descriptorSocket: Int32) {
        self.execution = execution
        self.manifest = manifest
        self.connection = connection
        self.descriptorSocket = descriptorSocket
    }

    /// The provider's process id.
    public var pid: Int32 { execution.pid }
    /// netextd's end of the flow channel (when launched with `flowChannel`).
    public var flowChannel: Int32 { descriptorSocket }

    /// Hands a descriptor to the provider (it receives it on its descriptor 4).
    public func send(descriptor: Int32) throws(NetExtError) {
        do { try SocketPair.send(descriptor: descriptor, over: descriptorSocket) } catch {
            throw NetExtError(.providerFailed, "cannot pass a descriptor to provider '\(manifest.bundleIdentifier)': \(error)")
        }
    }

    /// Shuts the descriptor socket down (a thread blocked reading it wakes up, later sends
    /// fail); the descriptor itself is closed only when this object goes away, so no thread that
    /// still holds the provider can reach a reused descriptor number.
    private func closeDescriptorSocket() {
        let wasClosed = descriptorSocketClosed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { SocketPair.shutdown(descriptorSocket) }
    }

    deinit {
        SocketPair.close(descriptorSocket)
    }

    /// Starts the provider (as its manifest's user, by `launcher`) with one end of a socketpair
    /// as descriptor 3. With `isolateNetwork` it runs in a network namespace of its own with
    /// nothing in it (a filter data provider: it sees flows and must not be able to send them
    /// anywhere). With `flowChannel`, descriptor 4 is a sequenced-packet socket carrying the
    /// filter's flows and verdicts (`FlowChannelCodec`) instead of passed descriptors.
    public static func launch(
        _ manifest: ProviderManifest, isolateNetwork: Bool = false, flowChannel: Bool = false, environment extra: [String: String] = [:],
        launcher: any ProviderLauncher = ProcessProviderLauncher()
    ) async throws(NetExtError) -> ProviderProcess {
        let pair: (Int32, Int32)
        let descriptorPair: (Int32, Int32)
        do {
            pair = try SocketPair.make()
            do { descriptorPair = flowChannel ? try SocketPair.makePackets() : try SocketPair.make() } catch {
                SocketPair.close(pair.0)
                SocketPair.close(pair.1)
                throw error
            }
        } catch {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': \(error)")
        }
        let environment = extra.merging([
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/",
            "NETEXT_PROVIDER_BUNDLE_IDENTIFIER": manifest.bundleIdentifier,
            "NETEXT_PROVIDER_FD": "\(ProviderDescriptors.control)",
            "NETEXT_PROVIDER_DESCRIPTOR_FD": "\(ProviderDescriptors.descriptorPassing)",
        ]) { _, fixed in fixed }
        let execution: any ProviderExecution
        do {
            execution = try launcher.start(manifest, control: pair.1, descriptors: descriptorPair.1, environment: environment, isolateNetwork: isolateNetwork)
        } catch {
            SocketPair.close(pair.0)
            SocketPair.close(descriptorPair.0)
            throw error
        }
        do {
            let connection = try await FramedConnection.adopt(descriptor: pair.0)
            return ProviderProcess(execution: execution, manifest: manifest, connection: connection, descriptorSocket: descriptorPair.0)
        } catch {
            SocketPair.close(descriptorPair.0)
            execution.forceEnd()
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': cannot attach its socket: \(error)")
        }
    }

    /// Sends a message to the provider.
    public func send(_ message: ProviderMessage) async throws(NetExtError) {
        do { try await connection.send(message) } catch {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)' is gone: \(error)")
        }
    }

    /// Waits for the provider to end and returns its `waitpid` status.
    public func waitForExit() async -> Int32 {
        let status = await execution.waitForExit()
        exited.withLock { $0 = true }
        return status
    }

    /// Ends the process: after `patience` (time to exit on its own) SIGTERM, then SIGKILL to
    /// its process group after `grace`. Only a process that has not been reaped is signalled,
    /// so a reused pid is never hit.
    public func terminate(patience: Duration = .zero, grace: Duration = .seconds(3)) {
        let execution = self.execution
        Task {
            if patience > .zero { try? await Task.sleep(for: patience) }
            guard !self.exited.withLock({ $0 }) else { return }
            execution.requestEnd()
            try? await Task.sleep(for: grace)
            guard !self.exited.withLock({ $0 }) else { return }
            execution.forceEnd()
        }
        connection.close()
        closeDescriptorSocket()
    }
}
