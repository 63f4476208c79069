import Foundation
import NetExtCore
import NetExtIPC
import NetExtTransport
import NIOCore
import NIOFoundationCompat
import Synchronization

/// A client of netextd's control socket: requests with deadlines, and a stream of notifications.
/// Every manager type and every `netext` command talks to the daemon through one of these.
public final class ControlClient: Sendable {
    /// The socket path from `$NETEXT_SOCKET`, or `/run/netext/netextd.sock`.
    public static var defaultSocketPath: String {
        ProcessInfo.processInfo.environment["NETEXT_SOCKET"] ?? "/run/netext/netextd.sock"
    }

    /// The daemon's answer to `hello`: protocol version, the caller's uid, whether it may modify.
    package var hello: HelloResult { state.withLock { $0.hello } }
    /// The caller's user id, as the kernel reported it to netextd.
    public var uid: UInt32 { hello.uid }
    /// Whether the caller may change configurations (root or netextd's admin group).
    public var mayModify: Bool { hello.mayModify }
    /// netextd's version.
    public var daemonVersion: String { hello.daemonVersion }
    /// The app identifier this program declared when it connected: configurations it creates
    /// belong to this app (and to the caller's user).
    public let appIdentifier: String
    private let connection: FramedConnection
    private let state: Mutex<State>

    private struct State: ~Copyable {
        var nextID = 1
        var hello = HelloResult(version: 0, daemonVersion: "", uid: 0, mayModify: false)
        var pending: [Int: PendingReply] = [:]
        var subscribers: [UUID: AsyncStream<ControlNotification>.Continuation] = [:]
        var subscribed = false
        var closed = false
    }

    private init(connection: FramedConnection, appIdentifier: String) {
        self.connection = connection
        self.appIdentifier = appIdentifier
        self.state = Mutex(State())
    }

    /// The system's words for a failed connect ("No such file or directory"), not NIO's
    /// description of the call.
    static func reason(_ error: any Error) -> String {
        (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
    }

    /// Connects to netextd and introduces the client as `appIdentifier`.
    public static func connect(
        appIdentifier: String,
        socketPath: String = ControlClient.defaultSocketPath,
        timeout: Duration = .seconds(10)
    ) async throws(NetExtError) -> ControlClient {
        let connection: FramedConnection
        do {
            connection = try await FramedConnection.connect(unixSocketPath: socketPath)
        } catch {
            throw NetExtError(.daemonUnavailable, "netextd is not running or not reachable at \(socketPath) (\(Self.reason(error))); start it with `netextd` (or `systemctl start netextd`), or point $NETEXT_SOCKET at its socket")
        }
        let client = ControlClient(connection: connection, appIdentifier: appIdentifier)
        client.startReading()
        do {
            let hello = try await client.call(Hello(appIdentifier: appIdentifier), timeout: timeout)
            client.state.withLock { $0.hello = hello }
        } catch {
            client.close()
            throw error
        }
        return client
    }

    /// Sends a request and waits for its result, at most `timeout`. The method decides the
    /// result's type; the reply is decoded once, straight into it.
    package func call<Method: ControlMethod>(_ method: Method, timeout: Duration = .seconds(30)) async throws(NetExtError) -> Method.Result {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let payload: Data
        do {
            payload = try ControlProtocol.payload(RequestEnvelope(id: id, method: method))
        } catch {
            throw NetExtError(.protocolError, "could not encode \(Method.name): \(error)")
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            self?.fail(id: id, NetExtError(.timedOut, "netextd did not answer \(Method.name) within \(timeout)"))
        }
        defer { timer.cancel() }
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Method.Result, any Error>) in
                let pending = PendingReply(method: Method.name) { outcome in
                    switch outcome {
                    case .failure(let error): continuation.resume(throwing: error)
                    case .success(let decoder):
                        do { continuation.resume(returning: try Method.Result(from: decoder)) } catch {
                            continuation.resume(throwing: NetExtError(.protocolError, "unexpected reply to \(Method.name): \(error)"))
                        }
                    }
                }
                let closed = state.withLock { state in
                    if state.closed { return true }
                    state.pending[id] = pending
                    return false
                }
                if closed {
                    continuation.resume(throwing: NetExtError(.daemonUnavailable, "the connection to netextd is closed"))
                    return
                }
                Task { [connection] in
                    do { try await connection.send(payload: payload) } catch {
                        self.fail(id: id, NetExtError(.daemonUnavailable, "could not send to netextd: \(error)"))
                    }
                }
            }
        } catch let error as NetExtError {
            throw error
        } catch {
            throw NetExtError(.protocolError, "\(error)")
        }
    }

    /// Notifications from netextd (configuration and status changes). Subscribes on first use.
    public func notifications() async throws(NetExtError) -> AsyncStream<ControlNotification> {
        let (stream, continuation) = AsyncStream<ControlNotification>.makeStream()
        let key = UUID()
        let needsSubscribe = state.withLock { state in
            state.subscribers[key] = continuation
            defer { state.subscribed = true }
            return !state.subscribed
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        if needsSubscribe {
            _ = try await call(Subscribe())
        }
        return stream
    }

    /// Closes the connection; pending calls fail with `daemonUnavailable`.
    public func close() {
        connection.close()
    }

    private func startReading() {
        Task { [self] in
            let decoder = ControlProtocol.makeDecoder()
            decoder.userInfo[ServerFrame.routerKey] = Router(client: self)
            for await frame in connection.frames {
                dispatch(frame, decoder: decoder)
            }
            let (pending, subscribers) = state.withLock { state in
                state.closed = true
                defer {
                    state.pending.removeAll()
                    state.subscribers.removeAll()
                }
                return (Array(state.pending.values), Array(state.subscribers.values))
            }
            for call in pending {
                call.deliver(.failure(NetExtError(.daemonUnavailable, "netextd closed the connection")))
            }
            for subscriber in subscribers { subscriber.finish() }
        }
    }

    /// Decodes one frame: a reply reaches its call during the decode; a notification goes to
    /// every subscriber. A frame that is not JSON of either shape is dropped.
    private func dispatch(_ frame: ByteBuffer, decoder: JSONDecoder) {
        guard case .notification(let notification)? = try? decoder.decode(ServerFrame.self, from: frame) else { return }
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.yield(notification) }
    }

    /// Hands the decoder the call waiting for a reply.
    private struct Router: ReplyRouting {
        weak var client: ControlClient?
        func takePending(_ id: Int) -> PendingReply? {
            client?.state.withLock { $0.pending.removeValue(forKey: id) }
        }
    }

    private func fail(id: Int, _ error: NetExtError) {
        let call = state.withLock { $0.pending.removeValue(forKey: id) }
        call?.deliver(.failure(error))
    }
}
