import Foundation
import NetExtCore
import NetExtIPC
import Synchronization

/// A client of netextd's control socket: requests with deadlines, and a stream of notifications.
/// Every manager type and every `netext` command talks to the daemon through one of these.
public final class ControlClient: Sendable {
    /// The socket path from `$NETEXT_SOCKET`, or `/run/netext/netextd.sock`.
    public static var defaultSocketPath: String {
        ProcessInfo.processInfo.environment["NETEXT_SOCKET"] ?? "/run/netext/netextd.sock"
    }

    /// The daemon's answer to `hello`: protocol version, the caller's uid, whether it may modify.
    public var hello: HelloResult { state.withLock { $0.hello } }
    public let appIdentifier: String
    private let connection: FramedConnection
    private let state: Mutex<State>

    private struct State: ~Copyable {
        var nextID = 1
        var hello = HelloResult(version: 0, daemonVersion: "", uid: 0, mayModify: false)
        var pending: [Int: CheckedContinuation<[UInt8], any Error>] = [:]
        var subscribers: [UUID: AsyncStream<ControlNotification>.Continuation] = [:]
        var subscribed = false
        var closed = false
    }

    private init(connection: FramedConnection, appIdentifier: String) {
        self.connection = connection
        self.appIdentifier = appIdentifier
        self.state = Mutex(State())
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
            throw NetExtError(.daemonUnavailable, "netextd is not running or not reachable at \(socketPath) (\(error)); start it with `netextd` (or `systemctl start netextd`), or point $NETEXT_SOCKET at its socket")
        }
        let client = ControlClient(connection: connection, appIdentifier: appIdentifier)
        client.startReading()
        do {
            let hello = try await client.call(.hello(.init(appIdentifier: appIdentifier)), expecting: HelloResult.self, timeout: timeout)
            client.state.withLock { $0.hello = hello }
        } catch {
            client.close()
            throw error
        }
        return client
    }

    /// Sends a request and waits for its result, at most `timeout`.
    public func call<Result: Codable & Sendable>(
        _ request: ControlRequest,
        expecting: Result.Type,
        timeout: Duration = .seconds(30)
    ) async throws(NetExtError) -> Result {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let frame: [UInt8]
        do {
            frame = try ControlProtocol.framed(RequestEnvelope(id: id, request: request)).dropFirst(4).map { $0 }
        } catch {
            throw NetExtError(.protocolError, "could not encode \(request.method): \(error)")
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            self?.fail(id: id, NetExtError(.timedOut, "netextd did not answer \(request.method) within \(timeout)"))
        }
        defer { timer.cancel() }
        let reply: [UInt8]
        do {
            reply = try await withCheckedThrowingContinuation { continuation in
                let closed = state.withLock { state in
                    if state.closed { return true }
                    state.pending[id] = continuation
                    return false
                }
                if closed {
                    continuation.resume(throwing: NetExtError(.daemonUnavailable, "the connection to netextd is closed"))
                    return
                }
                Task { [connection] in
                    do { try await connection.send(frame: frame) } catch {
                        self.fail(id: id, NetExtError(.daemonUnavailable, "could not send to netextd: \(error)"))
                    }
                }
            }
        } catch let error as NetExtError {
            throw error
        } catch {
            throw NetExtError(.protocolError, "\(error)")
        }
        return try Self.decodeResult(reply, expecting: expecting, method: request.method)
    }

    private static func decodeResult<Result: Codable & Sendable>(_ reply: [UInt8], expecting: Result.Type, method: String) throws(NetExtError) -> Result {
        let decoder = ControlProtocol.makeDecoder()
        let data = Data(reply)
        let header: ServerMessageHeader
        do { header = try decoder.decode(ServerMessageHeader.self, from: data) } catch {
            throw NetExtError(.protocolError, "malformed reply to \(method): \(error)")
        }
        if let error = header.error { throw error }
        do {
            return try decoder.decode(ResultEnvelope<Result>.self, from: data).result
        } catch {
            throw NetExtError(.protocolError, "unexpected reply to \(method): \(error)")
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
            _ = try await call(.subscribe, expecting: EmptyResult.self)
        }
        return stream
    }

    /// Closes the connection; pending calls fail with `daemonUnavailable`.
    public func close() {
        connection.close()
    }

    private func startReading() {
        Task { [self] in
            for await frame in connection.frames {
                dispatch(frame)
            }
            let (pending, subscribers) = state.withLock { state in
                state.closed = true
                defer {
                    state.pending.removeAll()
                    state.subscribers.removeAll()
                }
                return (Array(state.pending.values), Array(state.subscribers.values))
            }
            for continuation in pending {
                continuation.resume(throwing: NetExtError(.daemonUnavailable, "netextd closed the connection"))
            }
            for subscriber in subscribers { subscriber.finish() }
        }
    }

    private func dispatch(_ frame: [UInt8]) {
        let decoder = ControlProtocol.makeDecoder()
        guard let header = try? decoder.decode(ServerMessageHeader.self, from: Data(frame)) else { return }
        if let id = header.id {
            let continuation = state.withLock { $0.pending.removeValue(forKey: id) }
            continuation?.resume(returning: frame)
        } else if header.event != nil, let envelope = try? decoder.decode(NotificationEnvelope.self, from: Data(frame)) {
            let subscribers = state.withLock { Array($0.subscribers.values) }
            for subscriber in subscribers { subscriber.yield(envelope.notification) }
        }
    }

    private func fail(id: Int, _ error: NetExtError) {
        let continuation = state.withLock { $0.pending.removeValue(forKey: id) }
        continuation?.resume(throwing: error)
    }
}
