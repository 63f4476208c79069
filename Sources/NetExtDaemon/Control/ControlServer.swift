import Foundation
import Synchronization
import Logging
import NetExtTransport
import NetExtCore
import NetExtIPC
import NetExtLinux
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// The control socket: accepts connections, reads each peer's credentials from the kernel,
/// requires `hello` first, then hands requests to the `ControlService`, within `ControlLimits`.
public final class ControlServer: Sendable {
    let service: ControlService
    let adminGroupID: UInt32?
    let logger: Logger
    let limits: ControlLimits
    private let channel: any Channel
    /// Open connections by user id (root's are not counted).
    private let connectionsByUser = Mutex([UInt32: Int]())

    private init(service: ControlService, adminGroupID: UInt32?, logger: Logger, limits: ControlLimits, channel: any Channel) {
        self.service = service
        self.adminGroupID = adminGroupID
        self.logger = logger
        self.limits = limits
        self.channel = channel
    }

    /// Binds the socket at `path` (mode 0666: anyone may connect and read status; what each peer
    /// may change is decided per request from its credentials). Refuses to take over the socket
    /// of a netextd that is still running.
    public static func start(
        path: String, service: ControlService, adminGroupID: UInt32?, logger: Logger, limits: ControlLimits = ControlLimits()
    ) async throws -> ControlServer {
        if FileManager.default.fileExists(atPath: path) {
            if (try? await FramedConnection.connect(unixSocketPath: path))?.close() != nil {
                throw NetExtError(.configurationReadWriteFailed, "another netextd is already listening on \(path)")
            }
        }
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: limits.backlog)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 * 1024, high: 1024 * 1024))
        // The child initializer runs before the server object exists; the box bridges that.
        let serverBox = ServerBox()
        let childBootstrap = bootstrap.childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let connection = try FramedConnection.attach(to: channel, maximumFrameLength: limits.frameBeforeHello)
                if let server = serverBox.server.withLock({ $0 }) { server.serve(connection) } else { connection.close() }
            }
        }
        let channel = try await childBootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        chmod(path, 0o666)
        let server = ControlServer(service: service, adminGroupID: adminGroupID, logger: logger, limits: limits, channel: channel)
        serverBox.server.withLock { $0 = server }
        return server
    }

    /// Stops accepting connections and removes the socket file.
    public func close(path: String) async {
        try? await channel.close()
        unlink(path)
    }

    private func serve(_ connection: FramedConnection) {
        guard let provider = connection.channel as? any SocketOptionProvider else {
            connection.close()
            return
        }
        Task {
            let credentials: PeerCredentials
            do {
                let cred: KernelUCred = try await provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED)).get()
                credentials = PeerCredentials.from(pid: cred.pid, uid: cred.uid, gid: cred.gid)
            } catch {
                logger.warning("cannot read peer credentials; closing", metadata: ["error": "\(error)"])
                connection.close()
                return
            }
            if let refusal = admit(uid: credentials.uid) {
                try? await connection.send(ErrorEnvelope(id: 0, error: NetExtError(.daemonUnavailable, refusal)))
                connection.close()
                return
            }
            await ControlConnection(connection: connection, credentials: credentials, server: self).run()
            release(uid: credentials.uid)
        }
    }

    /// Counts a new connection of `uid`; returns why it is refused, if it is.
    private func admit(uid: UInt32) -> String? {
        guard uid != 0 else { return nil }
        let limits = self.limits
        let refusal: String? = connectionsByUser.withLock { counts in
            if counts[uid, default: 0] >= limits.connectionsPerUser {
                return "user \(uid) already has \(limits.connectionsPerUser) connections to netextd open; close one first"
            }
            if counts.values.reduce(0, +) >= limits.connectionsOfOtherUsers {
                return "netextd has \(limits.connectionsOfOtherUsers) connections of users other than root open; try again later"
            }
            counts[uid, default: 0] += 1
            return nil
        }
        if let refusal { logger.warning("control connection refused", metadata: ["uid": "\(uid)", "reason": "\(refusal)"]) }
        return refusal
    }

    private func release(uid: UInt32) {
        guard uid != 0 else { return }
        connectionsByUser.withLock { counts in
            counts[uid, default: 1] -= 1
            if counts[uid] == 0 { counts[uid] = nil }
        }
    }
}

/// Lets the child-channel initializer find the server once it exists.
private final class ServerBox: Sendable {
    let server = Mutex<ControlServer?>(nil)
}
