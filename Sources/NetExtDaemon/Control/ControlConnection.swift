import Foundation
import NetExtTransport
import NetExtCore
import NetExtIPC
import NetExtLinux
import NIOCore
import NIOFoundationCompat
import Synchronization

/// One client connection: `hello` first (within `ControlLimits.helloDeadline`), then requests
/// (answered concurrently, at most `requestsInFlightPerConnection` at once), and notifications
/// once subscribed.
struct ControlConnection {
    let connection: FramedConnection
    let credentials: PeerCredentials
    let server: ControlServer

    func run() async {
        var identity: ClientIdentity?
        var subscription: UUID?
        let decoder = ControlProtocol.makeDecoder()
        let limits = server.limits
        let greeted = Atomic(false)
        let connection = self.connection
        // Root's connections have no hello deadline: root cannot be refused, and a loaded
        // machine may delay a client's first frame.
        let uid = credentials.uid
        let helloWatch = Task {
            guard uid != 0 else { return }
            try await Task.sleep(for: limits.helloDeadline)
            if !greeted.load(ordering: .relaxed) { connection.close() }
        }
        defer { helloWatch.cancel() }
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for await frame in connection.frames {
                let envelope: RequestEnvelope
                do {
                    envelope = try decoder.decode(RequestEnvelope.self, from: frame)
                } catch {
                    await send(ErrorEnvelope(id: 0, error: NetExtError(.protocolError, "malformed request: \(JSONDecodingText.describe(error, data: Data(buffer: frame)))")))
                    connection.close()
                    break
                }
                guard let current = identity else {
                    guard let hello = envelope.method as? Hello else {
                        await send(ErrorEnvelope(id: envelope.id, error: NetExtError(.protocolError, "the first request must be hello")))
                        connection.close()
                        break
                    }
                    guard ControlProtocol.supportedVersions.contains(hello.version) else {
                        await send(ErrorEnvelope(id: envelope.id, error: NetExtError(.protocolError, "protocol version \(hello.version) is not supported; netextd speaks version \(ControlProtocol.version)")))
                        connection.close()
                        break
                    }
                    let app = hello.appIdentifier.trimmingCharacters(in: .whitespaces)
                    guard !app.isEmpty, app.count <= 255, !LogText.containsControlCharacters(app) else {
                        await send(ErrorEnvelope(id: envelope.id, error: NetExtError.invalid("hello: appIdentifier must be 1 to 255 characters without control characters")))
                        connection.close()
                        break
                    }
                    let established = ClientIdentity(credentials: credentials, appIdentifier: app, adminGroupID: server.adminGroupID)
                    identity = established
                    greeted.store(true, ordering: .relaxed)
                    connection.frameLimit.set(established.mayModify ? limits.frameForAdministrators : limits.frameForReaders)
                    await send(ResultEnvelope(id: envelope.id, result: HelloResult(
                        version: hello.version, daemonVersion: ControlService.daemonVersion,
                        uid: credentials.uid, mayModify: established.mayModify)))
                    continue
                }
                switch envelope.method {
                case is Hello:
                    await send(ErrorEnvelope(id: envelope.id, error: NetExtError(.protocolError, "hello was already sent")))
                case is Subscribe:
                    if subscription == nil {
                        let channel = connection.channel
                        subscription = server.service.hub.add(.init(identity: current) { frame in
                            guard channel.isActive, channel.isWritable else {
                                channel.close(promise: nil)
                                return false
                            }
                            channel.writeAndFlush(FramedConnection.frame(frame, allocator: channel.allocator), promise: nil)
                            return true
                        })
                    }
                    await send(ResultEnvelope(id: envelope.id, result: EmptyResult()))
                default:
                    // Backpressure: past the limit, stop reading until an answer has gone out.
                    if inFlight >= limits.requestsInFlightPerConnection {
                        connection.pauseReading()
                        await group.next()
                        inFlight -= 1
                        connection.resumeReading()
                    }
                    inFlight += 1
                    group.addTask {
                        let reply = await server.service.reply(to: envelope, from: current)
                        try? await connection.send(payload: reply)
                    }
                }
            }
        }
        if let subscription { server.service.hub.remove(subscription) }
        connection.close()
    }

    private func send<Message: Encodable>(_ message: Message) async {
        try? await connection.send(message)
    }
}
