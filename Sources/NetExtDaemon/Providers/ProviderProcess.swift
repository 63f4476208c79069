import Foundation
import Synchronization
import NetExtTransport
import NetExtCore
import NetExtIPC
import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// A running provider: its process and the framed connection on its inherited socket.
public final class ProviderProcess: Sendable {
    public let pid: Int32
    public let manifest: ProviderManifest
    public let connection: FramedConnection
    /// netextd's end of the socketpair that carries file descriptors (the TUN device) to the
    /// provider's descriptor 4, with SCM_RIGHTS.
    private let descriptorSocket: Int32
    private let exited = Mutex(false)
    private let descriptorSocketClosed = Mutex(false)

    private init(pid: Int32, manifest: ProviderManifest, connection: FramedConnection, descriptorSocket: Int32) {
        self.pid = pid
        self.manifest = manifest
        self.connection = connection
        self.descriptorSocket = descriptorSocket
    }

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

    /// Starts the provider as its manifest's user with one end of a socketpair as descriptor 3.
    /// With `isolateNetwork` it runs in a network namespace of its own with nothing in it (a
    /// filter data provider: it sees flows and must not be able to send them anywhere).
    /// With `flowChannel`, descriptor 4 is a sequenced-packet socket carrying the filter's flows
    /// and verdicts (`FlowChannelCodec`) instead of passed descriptors.
    public static func launch(
        _ manifest: ProviderManifest, isolateNetwork: Bool = false, flowChannel: Bool = false, environment extra: [String: String] = [:]
    ) async throws(NetExtError) -> ProviderProcess {
        // Running as root is allowed only when the manifest says "root" explicitly, and only
        // when netextd itself is root; otherwise privileges are dropped to the named user.
        let user: UserDatabase.User?
        if getuid() != 0 {
            user = nil
        } else if let found = UserDatabase.user(named: manifest.user) {
            user = found.uid == 0 ? nil : found
        } else {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': user '\(manifest.user)' does not exist")
        }
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
        let pid: Int32
        do {
            pid = try ProcessSpawner.spawn(executable: manifest.executable, arguments: manifest.arguments, environment: environment, user: user, childSocket: pair.1, secondSocket: descriptorPair.1, isolateNetwork: isolateNetwork)
        } catch {
            for fd in [pair.0, pair.1, descriptorPair.0, descriptorPair.1] { SocketPair.close(fd) }
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)' could not be started: \(error)")
        }
        SocketPair.close(pair.1)
        SocketPair.close(descriptorPair.1)
        do {
            let connection = try await FramedConnection.adopt(descriptor: pair.0)
            return ProviderProcess(pid: pid, manifest: manifest, connection: connection, descriptorSocket: descriptorPair.0)
        } catch {
            SocketPair.close(descriptorPair.0)
            ProcessSpawner.signal(SIGKILL, to: pid)
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)': cannot attach its socket: \(error)")
        }
    }

    /// Sends a message to the provider.
    public func send(_ message: ProviderMessage) async throws(NetExtError) {
        do { try await connection.send(message) } catch {
            throw NetExtError(.providerFailed, "provider '\(manifest.bundleIdentifier)' is gone: \(error)")
        }
    }

    /// Waits for the process to exit and returns its `waitpid` status (blocking happens on a
    /// dedicated thread, never on the cooperative pool).
    public func waitForExit() async -> Int32 {
        let pid = self.pid
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                let status = ProcessSpawner.waitForExit(pid: pid)
                self.exited.withLock { $0 = true }
                continuation.resume(returning: status)
            }
            thread.name = "netextd-wait-\(pid)"
            thread.start()
        }
    }

    /// Ends the process: after `patience` (time to exit on its own) SIGTERM, then SIGKILL to
    /// its process group after `grace`. Only a process that has not been reaped is signalled,
    /// so a reused pid is never hit.
    public func terminate(patience: Duration = .zero, grace: Duration = .seconds(3)) {
        let pid = self.pid
        Task {
            if patience > .zero { try? await Task.sleep(for: patience) }
            guard !self.exited.withLock({ $0 }) else { return }
            ProcessSpawner.signal(SIGTERM, to: pid)
            try? await Task.sleep(for: grace)
            guard !self.exited.withLock({ $0 }) else { return }
            ProcessSpawner.signal(SIGKILL, to: -pid)
            ProcessSpawner.signal(SIGKILL, to: pid)
        }
        connection.close()
        closeDescriptorSocket()
    }
}
