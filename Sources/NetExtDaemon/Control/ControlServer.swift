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
/// requires `hello` first, then hands requests to the `ControlService`.
public final class ControlServer: Sendable {
    let service: ControlService
    let adminGroupID: UInt32?
    let logger: Logger
    private let channel: any Channel

    private init(service: ControlService, adminGroupID: UInt32?, logger: Logger, channel: any Channel) {
        self.service = service
        self.adminGroupID = adminGroupID
        self.logger = logger
        self.channel = channel
    }

    /// Binds the socket at `path` (mode 0666: anyone may connect and read status; what each peer
    /// may change is decided per request from its credentials). Refuses to take over the socket
    /// of a netextd that is still running.
    public static func start(path: String, service: ControlService, adminGroupID: UInt32?, logger: Logger) async throws -> ControlServer {
        if FileManager.default.fileExists(atPath: path) {
            if (try? await FramedConnection.connect(unixSocketPath: path))?.close() != nil {
                throw NetExtError(.configurationReadWriteFailed, "another netextd is already listening on \(path)")
            }
        }
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 * 1024, high: 1024 * 1024))
        // The child initializer runs before the server object exists; the box bridges that.
        let serverBox = ServerBox()
        let childBootstrap = bootstrap.childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                let connection = try FramedConnection.attach(to: channel)
                if let server = serverBox.server.withLock({ $0 }) { server.serve(connection) } else { connection.close() }
            }
        }
        let channel = try await childBootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        chmod(path, 0o666)
        let server = ControlServer(service: service, adminGroupID: adminGroupID, logger: logger, channel: channel)
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
            await ControlConnection(connection: connection, credentials: credentials, server: self).run()
        }
    }
}

/// Lets the child-channel initializer find the server once it exists.
private final class ServerBox: Sendable {
    let server = Mutex<ControlServer?>(nil)
}
