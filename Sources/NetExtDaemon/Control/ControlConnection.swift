import Foundation
import NetExt
import NetExtCore
import NetExtIPC
import NetExtLinux
import NIOCore

/// One client connection: `hello` first, then requests (each answered concurrently), and
/// notifications once subscribed.
struct ControlConnection {
    let connection: FramedConnection
    let credentials: PeerCredentials
    let server: ControlServer

    func run() async {
        var identity: ClientIdentity?
        var subscription: UUID?
        let decoder = ControlProtocol.makeDecoder()
        await withTaskGroup(of: Void.self) { group in
            for await frame in connection.frames {
                let envelope: RequestEnvelope
                do {
                    envelope = try decoder.decode(RequestEnvelope.self, from: Data(frame))
                } catch {
                    await send(ErrorEnvelope(id: 0, error: NetExtError(.protocolError, "malformed request: \(error)")))
                    connection.close()
                    break
                }
                guard let current = identity else {
                    guard case .hello(let hello) = envelope.request else {
                        await send(ErrorEnvelope(id: envelope.id, error: NetExtError(.protocolError, "the first request must be hello")))
                        connection.close()
                        break
                    }
                    guard hello.version == ControlProtocol.version else {
                        await send(ErrorEnvelope(id: envelope.id, error: NetExtError(.protocolError, "protocol version \(hello.version) is not supported; netextd speaks version \(ControlProtocol.version)")))
                        connection.close()
                        break
                    }
                    let app = hello.appIdentifier.trimmingCharacters(in: .whitespaces)
                    guard !app.isEmpty, app.count <= 255 else {
                        await send(ErrorEnvelope(id: envelope.id, error: NetExtError.invalid("hello: appIdentifier must be 1 to 255 characters")))
                        connection.close()
                        break
                    }
                    let established = ClientIdentity(credentials: credentials, appIdentifier: app, adminGroupID: server.adminGroupID)
                    identity = established
                    await send(ResultEnvelope(id: envelope.id, result: HelloResult(
                        version: ControlProtocol.version, daemonVersion: ControlService.daemonVersion,
                        uid: credentials.uid, mayModify: established.mayModify)))
                    continue
                }
                switch envelope.request {
                case .hello:
                    await send(ErrorEnvelope(id: envelope.id, error: NetExtError(.protocolError, "hello was already sent")))
                case .subscribe:
                    if subscription == nil {
                        let channel = connection.channel
                        subscription = server.service.hub.add(.init(identity: current) { frame in
                            guard channel.isActive, channel.isWritable else {
                                channel.close(promise: nil)
                                return false
                            }
                            var buffer = channel.allocator.buffer(capacity: frame.count)
                            buffer.writeBytes(frame)
                            channel.writeAndFlush(buffer, promise: nil)
                            return true
                        })
                    }
                    await send(ResultEnvelope(id: envelope.id, result: EmptyResult()))
                default:
                    group.addTask {
                        let reply = await server.service.reply(to: envelope, from: current)
                        try? await connection.send(frame: Array(reply.dropFirst(4)))
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
