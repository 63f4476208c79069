import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import Testing

@testable import NetExtHTTP

/// An HTTPS server on 127.0.0.1 (HTTP/1.1, the test CA's certificate) that answers every request
/// "secure hello" and closes the connection, so each load opens a new one. It counts requests.
final class LoopbackHTTPSServer: Sendable {
    let channel: any Channel
    let requests = Atomic<Int>(0)
    var port: Int { channel.localAddress!.port! }

    init(context: NIOSSLContext) async throws {
        let counter = Counter()
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Responder(counter: counter))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        counter.server = self
    }

    func close() async throws { try await channel.close() }

    private final class Counter: @unchecked Sendable { weak var server: LoopbackHTTPSServer? }

    private final class Responder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let counter: Counter
        init(counter: Counter) { self.counter = counter }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            counter.server?.requests.add(1, ordering: .relaxed)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "12")
            headers.add(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "secure hello")))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}

/// Judges server trust challenges with `decide`, recording each; answers nothing else.
final class TrustJudge: NetExtHTTP.URLSessionDelegate {
    let decide: @Sendable (ServerTrust) -> (NetExtHTTP.URLSession.AuthChallengeDisposition, URLCredential?)
    let seen = Mutex<[URLAuthenticationChallenge]>([])
    init(_ decide: @escaping @Sendable (ServerTrust) -> (NetExtHTTP.URLSession.AuthChallengeDisposition, URLCredential?)) { self.decide = decide }

    func urlSession(_ session: NetExtHTTP.URLSession, didReceive challenge: URLAuthenticationChallenge) async -> (NetExtHTTP.URLSession.AuthChallengeDisposition, URLCredential?) {
        seen.withLock { $0.append(challenge) }
        guard challenge.protectionSpace.authenticationMethod == .serverTrust, let trust = challenge.protectionSpace.serverTrust else { return (.performDefaultHandling, nil) }
        return decide(trust)
    }
}

@Suite("Server trust challenges (NSURLAuthenticationMethodServerTrust)")
struct ServerTrustTests {
    /// `trustsCA`: the session trusts the test CA (else only the machine's CAs, which do not
    /// include it); `local`: NSAllowsLocalNetworking (which lifts ATS for 127.0.0.1, as
    /// NSExceptionAllowsInsecureHTTPLoads does for a domain).
    func session(_ delegate: TrustJudge, caFile: String, trustsCA: Bool, local: Bool) throws -> NetExtHTTP.URLSession {
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        if trustsCA { configuration.trust = try HTTPTrust.pemFile(caFile) }
        configuration.appTransportSecurity.allowsLocalNetworking = local
        configuration.urlFilter = nil
        return NetExtHTTP.URLSession(configuration: configuration, delegate: delegate)
    }

    @Test("a server default evaluation trusts: the delegate sees it trusted with its leaf, may let it load or refuse it (its own pinning) before any request")
    func trustedServer() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await LoopbackHTTPSServer(context: try certificates.serverContext())
        let url = URL(string: "https://127.0.0.1:\(server.port)/")!
        let pass = TrustJudge { _ in (.performDefaultHandling, nil) }
        let (data, _) = try await session(pass, caFile: certificates.caFile, trustsCA: true, local: false).data(from: url)
        #expect(String(decoding: data, as: UTF8.self) == "secure hello")
        let challenge = try #require(pass.seen.withLock { $0.first })
        #expect(challenge.protectionSpace.authenticationMethod == .serverTrust && challenge.protectionSpace.protocol == "https" && challenge.failureResponse == nil)
        let trust = try #require(challenge.protectionSpace.serverTrust)
        #expect(trust.isTrusted && trust.host == "127.0.0.1" && trust.certificates.count == 1 && trust.leaf?.commonName == "127.0.0.1")

        let pinned = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
        let strict = TrustJudge { trust in trust.leaf?.spkiSHA256Base64 == pinned ? (.performDefaultHandling, nil) : (.cancelAuthenticationChallenge, nil) }
        await #expect(throws: HTTPLoadError.cancelled) { _ = try await session(strict, caFile: certificates.caFile, trustsCA: true, local: false).data(from: url) }
        #expect(server.requests.load(ordering: .relaxed) == 1, "the refused server was sent nothing")
        try await server.close()
    }

    @Test("a server default evaluation refuses: the delegate sees why and every certificate; accepting it needs ATS's leave, then loads go to that certificate alone")
    func untrustedServer() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await LoopbackHTTPSServer(context: try certificates.serverContext())
        let url = URL(string: "https://127.0.0.1:\(server.port)/")!

        // Default handling: the load fails as it would without a delegate, saying why.
        let pass = TrustJudge { _ in (.performDefaultHandling, nil) }
        do {
            _ = try await session(pass, caFile: certificates.caFile, trustsCA: false, local: true).data(from: url)
            Issue.record("an untrusted server loaded")
        } catch {
            #expect("\(error)".contains("signed by 'test-ca', whom this session does not trust"), "\(error)")
        }
        let trust = try #require(pass.seen.withLock { $0.first?.protectionSpace.serverTrust })
        #expect(!trust.isTrusted && trust.certificates.count == 1 && trust.evaluationFailure?.contains("test-ca") == true)

        // Accepted under the default ATS rules: refused by ATS, naming the rule.
        let accept = TrustJudge { trust in (.useCredential, URLCredential(trust: trust)) }
        do {
            _ = try await session(accept, caFile: certificates.caFile, trustsCA: false, local: false).data(from: url)
            Issue.record("ATS let a delegate loosen trust without an exception")
        } catch HTTPLoadError.refused(let refusal) {
            #expect(refusal.rule == .serverTrust && refusal.description.contains("NSExceptionAllowsInsecureHTTPLoads"), "\(refusal)")
        }
        #expect(server.requests.load(ordering: .relaxed) == 0)

        // With ATS's leave: loads, and the session's next connection (the server closes each) is
        // trusted for that certificate without asking again.
        let accepting = try session(accept, caFile: certificates.caFile, trustsCA: false, local: true)
        for _ in 0..<2 { #expect(String(decoding: try await accepting.data(from: url).0, as: UTF8.self) == "secure hello") }
        #expect(accept.seen.withLock { $0.filter { $0.protectionSpace.authenticationMethod == .serverTrust }.count } == 2, "once for the refused session, once for this one")
        #expect(server.requests.load(ordering: .relaxed) == 2)

        // Accepting certificates other than the server's accepts nothing.
        let other = TrustJudge { trust in
            var forged = trust
            forged.certificates = [Data("not the server's".utf8)]
            return (.useCredential, URLCredential(trust: forged))
        }
        await #expect(throws: HTTPLoadError.self) { _ = try await session(other, caFile: certificates.caFile, trustsCA: false, local: true).data(from: url) }
        #expect(server.requests.load(ordering: .relaxed) == 2)
        try await server.close()
    }

    @Test("a data task becoming a stream task asks the delegate about its own connection too")
    func becomingStream() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await LoopbackHTTPSServer(context: try certificates.serverContext())
        let request = URLRequest(url: URL(string: "https://127.0.0.1:\(server.port)/")!)
        let accept = TrustJudge { trust in (.useCredential, URLCredential(trust: trust)) }
        let (response, stream) = try await session(accept, caFile: certificates.caFile, trustsCA: false, local: true).streamTask(becoming: request)
        #expect(response.statusCode == 200 && stream == nil, "no 101: the answer, no stream")
        #expect(accept.seen.withLock { $0.first?.protectionSpace.serverTrust?.isTrusted } == false)
        let refuse = TrustJudge { _ in (.cancelAuthenticationChallenge, nil) }
        await #expect(throws: HTTPLoadError.cancelled) { _ = try await session(refuse, caFile: certificates.caFile, trustsCA: true, local: false).streamTask(becoming: request) }
        #expect(server.requests.load(ordering: .relaxed) == 1)
        try await server.close()
    }

    @Test("STARTTLS on a stream task: the delegate sees the server trusted and may refuse it; the task then fails cancelled")
    func startTLSJudged() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try await StartTLSServer(context: try certificates.serverContext())
        var configuration = NetExtHTTP.URLSessionConfiguration.ephemeral
        configuration.trust = try HTTPTrust.pemFile(certificates.caFile)
        for refuses in [false, true] {
            let judge = TrustJudge { _ in refuses ? (.cancelAuthenticationChallenge, nil) : (.performDefaultHandling, nil) }
            let task = NetExtHTTP.URLSession(configuration: configuration, delegate: judge).streamTask(withHostName: "127.0.0.1", port: server.port)
            _ = try await task.readData(ofMinLength: 11, maxLength: 11, timeout: 5)
            try await task.write(Data("STARTTLS\r\n".utf8), timeout: 5)
            _ = try await task.readData(ofMinLength: 8, maxLength: 8, timeout: 5)
            if refuses {
                await #expect(throws: HTTPLoadError.cancelled) { try await task.startSecureConnection() }
            } else {
                try await task.startSecureConnection()
                try await task.write(Data("ping\r\n".utf8), timeout: 5)
                #expect(String(decoding: try await task.readData(ofMinLength: 6, maxLength: 6, timeout: 5).0, as: UTF8.self) == "ping\r\n")
            }
            #expect(judge.seen.withLock { $0.first?.protectionSpace.serverTrust?.isTrusted } == true)
            task.cancel()
        }
        try await server.close()
    }
}
