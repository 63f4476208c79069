import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import NetExtHTTP

/// A proxy on 127.0.0.1 that is also the far end of its tunnels: it answers an HTTP CONNECT
/// (RFC 9110 §9.3.6) or a SOCKS5 greeting and CONNECT (RFC 1928), sends the origin's greeting
/// "220 hello\r\n" in the same write as its own answer (bytes after the tunnel's answer are the
/// origin's), then echoes. A CONNECT to a host named "forbidden" is refused with 403. It records
/// what it was asked.
final class TunnelEndProxy: Sendable {
    let channel: any Channel
    let requests = NIOLockedValueBox<[String]>([])
    var port: Int { channel.localAddress!.port! }

    /// With `password`, the proxy wants user "alice" with it (Basic for CONNECT, RFC 1929 for SOCKS).
    init(password: String? = nil) async throws {
        let box = NIOLockedValueBox<TunnelEndProxy?>(nil)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Tunnel(password: password) { request in box.withLockedValue { $0 }?.requests.withLockedValue { $0.append(request) } })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        box.withLockedValue { $0 = self }
    }

    func close() async throws { try await channel.close() }

    private final class Tunnel: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let record: @Sendable (String) -> Void
        let password: String?
        var received = ByteBuffer()
        var phase = 0  // 0: first bytes, 1: SOCKS request awaited, 2: tunnel up (echo), 3: SOCKS password awaited
        init(password: String?, record: @escaping @Sendable (String) -> Void) {
            self.password = password
            self.record = record
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            if phase == 2 { return context.writeAndFlush(wrapOutboundOut(bytes), promise: nil) }
            received.writeBuffer(&bytes)
            let view = Array(received.readableBytesView)
            if phase == 0, view.first == 5 {
                guard view.count >= 2, view.count >= 2 + Int(view[1]) else { return }
                let methods = view[2..<(2 + Int(view[1]))]
                received.moveReaderIndex(forwardBy: 2 + Int(view[1]))
                guard password != nil else {
                    phase = 1
                    return context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [5, 0])), promise: nil)
                }
                guard methods.contains(2) else { return context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [5, 0xFF])), promise: nil) }
                phase = 3
                return context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [5, 2])), promise: nil)
            }
            if phase == 3 {
                // RFC 1929 §2: VER ULEN UNAME PLEN PASSWD.
                guard view.count >= 2, view.count >= 3 + Int(view[1]), view.count >= 3 + Int(view[1]) + Int(view[2 + Int(view[1])]) else { return }
                let user = String(decoding: view[2..<(2 + Int(view[1]))], as: UTF8.self)
                let secretStart = 3 + Int(view[1])
                let secret = String(decoding: view[secretStart..<(secretStart + Int(view[2 + Int(view[1])]))], as: UTF8.self)
                received.moveReaderIndex(forwardBy: secretStart + secret.utf8.count)
                record("SOCKS login \(user)")
                guard user == "alice", secret == password else { return context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [1, 1])), promise: nil) }
                phase = 1
                return context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: [1, 0])), promise: nil)
            }
            if phase == 1 {
                // VER CMD RSV ATYP=3 LEN NAME PORT (the client sends names).
                guard view.count >= 5, view.count >= 5 + Int(view[4]) + 2 else { return }
                let name = String(decoding: view[5..<(5 + Int(view[4]))], as: UTF8.self)
                let port = Int(view[5 + Int(view[4])]) << 8 | Int(view[6 + Int(view[4])])
                record("SOCKS \(name):\(port)")
                phase = 2
                var answer = ByteBuffer(bytes: [5, 0, 0, 1, 127, 0, 0, 1, 0, 80])
                answer.writeString("220 hello\r\n")
                context.writeAndFlush(wrapOutboundOut(answer), promise: nil)
                return
            }
            guard let end = received.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: received.readableBytesView[..<end.lowerBound], as: UTF8.self)
            let line = head.split(separator: "\r\n").first.map(String.init) ?? ""
            record(line)
            if let password {
                let expected = "proxy-authorization: basic " + Data("alice:\(password)".utf8).base64EncodedString().lowercased()
                guard head.lowercased().split(separator: "\r\n").contains(where: { $0 == expected }) else {
                    return context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"lab\"\r\nContent-Length: 0\r\n\r\n")), promise: nil)
                }
            }
            if line.contains("forbidden") {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")), promise: nil)
                return
            }
            phase = 2
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n220 hello\r\n")), promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}

@Suite("Stream tasks through the session's proxy")
struct StreamTaskProxyTests {
    func session(_ proxy: ConnectionProxy) -> NetExtHTTP.URLSession {
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        configuration.proxy = proxy
        configuration.urlFilter = nil
        return NetExtHTTP.URLSession(configuration: configuration)
    }

    @Test("through an HTTP proxy the task asks CONNECT for its host and port, then the bytes are the origin's (those sent with the answer included)")
    func httpConnect() async throws {
        let proxy = try await TunnelEndProxy()
        let task = session(.http(host: "127.0.0.1", port: proxy.port)).streamTask(withHostName: "chat.example.test", port: 5222)
        #expect(String(decoding: try await task.readData(ofMinLength: 11, maxLength: 11, timeout: 5).0, as: UTF8.self) == "220 hello\r\n")
        try await task.write(Data("ping\r\n".utf8), timeout: 5)
        #expect(String(decoding: try await task.readData(ofMinLength: 6, maxLength: 6, timeout: 5).0, as: UTF8.self) == "ping\r\n")
        #expect(proxy.requests.withLockedValue { $0 } == ["CONNECT chat.example.test:5222 HTTP/1.1"])
        task.cancel()
        try await proxy.close()
    }

    @Test("through a SOCKS5 proxy the name goes to the proxy to resolve")
    func socks() async throws {
        let proxy = try await TunnelEndProxy()
        let task = session(.socks5(host: "127.0.0.1", port: proxy.port)).streamTask(withHostName: "chat.example.test", port: 5222)
        #expect(String(decoding: try await task.readData(ofMinLength: 11, maxLength: 11, timeout: 5).0, as: UTF8.self) == "220 hello\r\n")
        try await task.write(Data("x".utf8), timeout: 5)
        #expect(try await task.readData(ofMinLength: 1, maxLength: 1, timeout: 5).0 == Data("x".utf8))
        #expect(proxy.requests.withLockedValue { $0 } == ["SOCKS chat.example.test:5222"])
        task.cancel()
        try await proxy.close()
    }

    @Test("proxy credentials: Basic for CONNECT, RFC 1929 for SOCKS5; none or wrong ones refused with a sentence that never shows the password")
    func credentials() async throws {
        let proxy = try await TunnelEndProxy(password: "s3cret:with:colons")
        func session(_ kind: ConnectionProxy, _ credential: URLCredential?) -> NetExtHTTP.URLSession {
            var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
            configuration.proxy = kind
            configuration.proxyCredential = credential
            configuration.urlFilter = nil
            return NetExtHTTP.URLSession(configuration: configuration)
        }
        let good = URLCredential(user: "alice", password: "s3cret:with:colons")
        let bad = URLCredential(user: "alice", password: "wrong")
        for kind in [ConnectionProxy.http(host: "127.0.0.1", port: proxy.port), .socks5(host: "127.0.0.1", port: proxy.port)] {
            let task = session(kind, good).streamTask(withHostName: "chat.example.test", port: 5222)
            #expect(String(decoding: try await task.readData(ofMinLength: 11, maxLength: 11, timeout: 5).0, as: UTF8.self) == "220 hello\r\n")
            task.cancel()
            for credential in [nil, bad] {
                do {
                    try await session(kind, credential).streamTask(withHostName: "chat.example.test", port: 5222).resume()
                    Issue.record("\(kind) let \(String(describing: credential)) through")
                } catch {
                    #expect(!error.description.contains("wrong") && !error.description.contains("s3cret"))
                    guard case .cannotConnect(_, let reason) = error else { Issue.record("\(error)"); continue }
                    switch (kind, credential) {
                    case (.http, nil): #expect(reason == "the proxy wants a user name and password (407); give them with the session's proxyCredential")
                    case (.http, _): #expect(reason == "the proxy refused the user name and password (407)")
                    case (.socks5, nil): #expect(reason == "the SOCKS server accepts none of the offered authentication methods")
                    case (.socks5, _): #expect(reason == "the SOCKS server refused the user name and password")
                    }
                }
            }
        }
        #expect(proxy.requests.withLockedValue { $0 }.filter { $0 == "SOCKS login alice" }.count == 2)
        #expect(String(describing: good) == "user alice (password withheld)")
        try await proxy.close()
    }

    @Test("a proxy that refuses the tunnel fails the task with its answer; an unreachable proxy is named")
    func refused() async throws {
        let proxy = try await TunnelEndProxy()
        let task = session(.http(host: "127.0.0.1", port: proxy.port)).streamTask(withHostName: "forbidden.example.test", port: 443)
        await #expect(throws: HTTPLoadError.cannotConnect(
            host: "forbidden.example.test:443 through the proxy http://127.0.0.1:\(proxy.port)", reason: "the proxy refused CONNECT forbidden.example.test:443 with 403 Forbidden")) {
            try await task.resume()
        }
        let port = proxy.port
        try await proxy.close()
        let unreachable = session(.http(host: "127.0.0.1", port: port)).streamTask(withHostName: "chat.example.test", port: 5222)
        do { try await unreachable.resume(); Issue.record("connected") } catch {
            guard case .cannotConnect(let host, _) = error else { Issue.record("\(error)"); return }
            #expect(host == "the proxy http://127.0.0.1:\(port)")
        }
    }
}

@Suite("Better routes")
struct BetterRouteTests {
    @Test("the source the kernel would pick for a peer: loopback for loopback (nothing is sent)")
    func preferredSource() throws {
        #expect(BetterRouteMonitor.preferredSource(for: try SocketAddress(ipAddress: "127.0.0.1", port: 9)) == "127.0.0.1")
        #expect(BetterRouteMonitor.preferredSource(for: try SocketAddress(ipAddress: "::1", port: 9)) == "::1")
    }
}

/// A server on 127.0.0.1 that switches protocols: a request with `Upgrade: echo` is answered 101
/// with "welcome\n" in the same write, then echoed; any other request gets 200 "plain".
final class UpgradeServer: Sendable {
    let channel: any Channel
    var port: Int { channel.localAddress!.port! }

    init(tls: NIOSSLContext? = nil) async throws {
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.addHandler(Switcher())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    func close() async throws { try await channel.close() }

    private final class Switcher: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        var received = ByteBuffer()
        var upgraded = false

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            if upgraded { return context.writeAndFlush(wrapOutboundOut(bytes), promise: nil) }
            received.writeBuffer(&bytes)
            guard let end = received.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
            let head = String(decoding: received.readableBytesView[..<end.lowerBound], as: UTF8.self).lowercased()
            if head.contains("\r\nupgrade: echo") {
                upgraded = true
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nwelcome\n")), promise: nil)
            } else {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain")), promise: nil)
            }
            received.clear()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}

@Suite("Data tasks becoming stream tasks")
struct BecomeStreamTests {
    func session() -> NetExtHTTP.URLSession {
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        configuration.appTransportSecurity.allowsLocalNetworking = true
        configuration.urlFilter = nil
        return NetExtHTTP.URLSession(configuration: configuration)
    }

    @Test("a 101 answer hands the connection to a stream task; the bytes sent with the head are its first")
    func switched() async throws {
        let server = try await UpgradeServer()
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/chat")!)
        request.setValue("echo", forHTTPHeaderField: "Upgrade")
        request.setValue("Upgrade", forHTTPHeaderField: "Connection")
        let (response, stream) = try await session().streamTask(becoming: request)
        #expect(response.statusCode == 101 && response.value(forHTTPHeaderField: "upgrade") == "echo")
        let task = try #require(stream)
        #expect(try await task.readData(ofMinLength: 8, maxLength: 8, timeout: 5).0 == Data("welcome\n".utf8))
        try await task.write(Data("over the raw connection".utf8), timeout: 5)
        #expect(try await task.readData(ofMinLength: 23, maxLength: 23, timeout: 5).0 == Data("over the raw connection".utf8))
        task.cancel()
        try await server.close()
    }

    @Test("over TLS the stream task goes on inside the same TLS session")
    func switchedOverTLS() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await UpgradeServer(tls: try certificates.serverContext())
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        configuration.trust = try HTTPTrust.pemFile(certificates.caFile)
        configuration.urlFilter = nil
        var request = URLRequest(url: URL(string: "https://127.0.0.1:\(server.port)/chat")!)
        request.setValue("echo", forHTTPHeaderField: "Upgrade")
        let (response, stream) = try await NetExtHTTP.URLSession(configuration: configuration).streamTask(becoming: request)
        #expect(response.statusCode == 101 && response.metrics.negotiatedTLSProtocolVersion == "TLS 1.3")
        let task = try #require(stream)
        #expect(try await task.readData(ofMinLength: 8, maxLength: 8, timeout: 5).0 == Data("welcome\n".utf8))
        try await task.write(Data("secret".utf8), timeout: 5)
        #expect(try await task.readData(ofMinLength: 6, maxLength: 6, timeout: 5).0 == Data("secret".utf8))
        task.cancel()
        try await server.close()
    }

    @Test("any other answer comes whole, with no stream task; ATS still applies")
    func notSwitched() async throws {
        let server = try await UpgradeServer()
        let (response, stream) = try await session().streamTask(becoming: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/")!))
        #expect(response.statusCode == 200 && stream == nil)
        var strict = NetExtHTTP.URLSessionConfiguration.ephemeral
        strict.urlFilter = nil
        do {
            _ = try await NetExtHTTP.URLSession(configuration: strict).streamTask(becoming: URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/")!))
            Issue.record("cleartext allowed")
        } catch {
            guard case .refused(let refusal) = error else { Issue.record("\(error)"); return }
            #expect(refusal.rule == .cleartextHTTP)
        }
        try await server.close()
    }
}
