import Foundation
import NetExtHTTP
import NetExtLinux
import NetExtTransport
import NIOCore
import NIOPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The transfer service's socket: a Unix stream socket (mode 0600 in a directory of the user's,
/// mode 0700) that only the user's own processes may use — the kernel's peer credentials are
/// checked on every connection. Each connection speaks the framed JSON of
/// `BackgroundTransferWire`.
final class TransferServer: Sendable {
    let path: String
    private let channel: any Channel
    private let service: TransferService
    private let log: @Sendable (String) -> Void

    private init(path: String, channel: any Channel, service: TransferService, log: @escaping @Sendable (String) -> Void) {
        self.path = path
        self.channel = channel
        self.service = service
        self.log = log
    }

    /// Binds `path`; refuses a directory another user owns or others may write, and a socket a
    /// running service still answers on.
    static func start(path: String, service: TransferService, log: @escaping @Sendable (String) -> Void) async throws(TransferServiceError) -> TransferServer {
        let directory = (path as NSString).deletingLastPathComponent
        try TransferDirectories.makePrivate(directory)
        if (try? await FramedConnection.connect(unixSocketPath: path))?.close() != nil {
            throw .setUp("another netext-transferd answers on \(path)")
        }
        let box = Mutex<TransferServer?>(nil)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = try FramedConnection.attach(to: channel)
                    if let server = box.withLock({ $0 }) { server.serve(connection) } else { connection.close() }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        } catch {
            throw .setUp("cannot listen on \(path): \(error)")
        }
        chmod(path, 0o600)
        let server = TransferServer(path: path, channel: channel, service: service, log: log)
        box.withLock { $0 = server }
        return server
    }

    func close() async {
        try? await channel.close()
        unlink(path)
    }

    private func serve(_ connection: FramedConnection) {
        guard let options = connection.channel as? any SocketOptionProvider else {
            connection.close()
            return
        }
        Task {
            let credentials: KernelUCred
            do {
                credentials = try await options.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED)).get()
            } catch {
                connection.close()
                return
            }
            guard credentials.uid == getuid() else {
                log("refused a connection from uid \(credentials.uid): the service is uid \(getuid())'s")
                connection.close()
                return
            }
            let link = TransferLink(connection: connection)
            await link.run(service: service)
            await service.detach(link)
        }
    }
}

/// One app's connection: commands in order, each reply sent before the events it brings.
final class TransferLink: TransferEventSink {
    private let connection: FramedConnection
    private let session = Mutex<String?>(nil)

    init(connection: FramedConnection) { self.connection = connection }

    func send(_ message: TransferServiceMessage) {
        guard let payload = try? JSONEncoder().encode(message) else { return }
        let channel = connection.channel
        channel.writeAndFlush(FramedConnection.frame(payload, allocator: channel.allocator), promise: nil)
    }

    func run(service: TransferService) async {
        let decoder = JSONDecoder()
        for await frame in connection.frames {
            let envelope: TransferCommandEnvelope
            do { envelope = try decoder.decode(TransferCommandEnvelope.self, from: Data(buffer: frame)) } catch {
                send(.reply(serial: 0, .refused("the command is not one the transfer service knows: \(Self.reason(error))")))
                continue
            }
            let (reply, after) = await service.handle(envelope.command, session: session.withLock { $0 }, from: self)
            if case .attach(let name) = envelope.command, case .attached = reply { session.withLock { $0 = name } }
            send(.reply(serial: envelope.serial, reply))
            for message in after { send(message) }
        }
    }

    /// A decoding failure as a sentence naming where it is.
    static func reason(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "\(error)" }
        switch decoding {
        case .dataCorrupted(let context): return "it is not JSON (\(context.debugDescription))"
        case .keyNotFound(let key, let context): return "'\(Self.path(context.codingPath + [key]))' is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "'\(Self.path(context.codingPath))' has the wrong type (\(context.debugDescription))"
        @unknown default: return "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}

/// The service's directories: made mode 0700, and refused when another user owns them or
/// others may write them (a planted directory could take the user's transfers).
enum TransferDirectories {
    static func makePrivate(_ path: String) throws(TransferServiceError) {
        var made = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            made += "/\(component)"
            if mkdir(made, 0o700) != 0, errno != EEXIST {
                throw .setUp("cannot make \(made): \(String(cString: strerror(errno)))")
            }
        }
        var facts = stat()
        guard lstat(path, &facts) == 0 else { throw .setUp("cannot read \(path): \(String(cString: strerror(errno)))") }
        guard facts.st_mode & S_IFMT == S_IFDIR else { throw .setUp("\(path) is not a directory") }
        guard facts.st_uid == getuid() else { throw .setUp("\(path) belongs to uid \(facts.st_uid), not to this user (uid \(getuid()))") }
        guard facts.st_mode & 0o022 == 0 else { throw .setUp("\(path) may be written by other users (mode \(String(facts.st_mode & 0o777, radix: 8))); make it 0700") }
    }
}
