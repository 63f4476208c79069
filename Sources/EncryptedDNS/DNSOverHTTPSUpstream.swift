import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import NetExtCore

/// DNS over HTTPS (RFC 8484): one HTTP/2 connection (TLS, ALPN `h2`) to the server's address,
/// the URL's host name checked against its certificate and sent as SNI and `:authority`, so no
/// look-up of that name is needed (and none leaks). Each query is one stream: a POST of the
/// message as `application/dns-message` (§4.1) — or a GET with the message in base64url as the
/// `dns` query variable (§4.1, §6), which HTTP caches can keep — its identifier 0 (§4.1: "SHOULD use a DNS ID of
/// 0" so that caches can share answers), padded to 128-byte blocks (RFC 8467 §4.1). The answer
/// must be a 2xx with that media type (§4.2.1) and the response to the question asked; the
/// client's identifier is put back on it.
public final class DNSOverHTTPSUpstream: EncryptedDNSUpstream, @unchecked Sendable {
    // @unchecked: every mutable member is touched only on `eventLoop`.
    public let serverDescription: String
    /// The largest answer body accepted (a DNS message cannot be longer, RFC 1035 §4.2.2).
    static let maximumAnswerBytes = 65_535

    /// The event loop its connection and futures live on.
    public let eventLoop: any EventLoop
    /// How its connection is reached: TCP to an address, or a connected socket someone else
    /// carries (a relay's stream).
    private let reach: Reach
    private let host: String
    /// `host[:port]` as `:authority` carries it.
    let authority: String
    /// The URL's path.
    let path: String
    private let context: NIOSSLContext
    /// POST (the message as the body) or GET (`?dns=`).
    private let usesGET: Bool
    private var connection: EventLoopFuture<Connection>?
    /// `connection` once it is open.
    private var openedConnection: Connection?
    private var isShutDown = false
    /// Streams open on the connection (at most ``maximumStreams``), and the queries waiting for one.
    private var streamsInUse = 0
    private var waitingForStream = CircularBuffer<PendingRequest>()
    /// The requests not yet done, by deadline (``PendingDeadlines``), and the one timer armed
    /// for the first of them: a timer per query cost a heap insertion and a cancellation each.
    private var deadlines = PendingDeadlines<PendingRequest>()
    private var deadlineTimer: (timer: Scheduled<Void>, at: NIODeadline)?
    /// RFC 9113 §6.5.2 recommends a server allow at least 100 concurrent streams.
    static let maximumStreams = 100

    struct Connection {
        var channel: any Channel
        var exchanges: DoHConnectionHandler
    }

    /// Gives a connected stream socket whose bytes reach the DoH server (a relay's CONNECT
    /// stream to its host and port, `NERelay.dnsOverHTTPSURL`); the upstream owns it from then.
    public typealias ConnectedSocketOpener = @Sendable (_ host: String, _ port: Int) throws -> Int32

    private enum Reach {
        case address(SocketAddress, mark: UInt32?)
        case socket(ConnectedSocketOpener, port: Int)
    }

    /// - Parameters:
    ///   - url: the DoH URL (`https://host[:port]/path`, path default `/dns-query`).
    ///   - address: the IP address to reach it at (the configuration's server); the port is the URL's.
    ///   - trust: whom the server's certificate must come from.
    ///   - mark: the connection's `SO_MARK` (netextd's resolver mark), nil for none.
    ///   - usesGET: queries as GET requests (`?dns=`, RFC 8484 §4.1) instead of POSTs.
    public convenience init(url: String, address: [UInt8], trust: DNSServerTrust = .system, mark: UInt32? = nil, usesGET: Bool = false, eventLoop: any EventLoop) throws(EncryptedDNSError) {
        let text = IPPrefix.format(address)
        try self.init(url: url, trust: trust, usesGET: usesGET, eventLoop: eventLoop) { port throws(EncryptedDNSError) in
            guard let socketAddress = try? SocketAddress(ipAddress: text, port: port) else {
                throw .connectFailed(server: "\(url) at \(text)", reason: "'\(text)' is not an IP address")
            }
            return (.address(socketAddress, mark: mark), "\(url) at \(text)")
        }
    }

    /// DoH whose connection is a socket `opener` gives for the URL's host and port (a relay's
    /// stream: the relay, not this machine, looks the name up). TLS and HTTP/2 run inside it
    /// as over TCP; the server's certificate is checked against the URL's host.
    public convenience init(url: String, through opener: @escaping ConnectedSocketOpener, description: String, trust: DNSServerTrust = .system, usesGET: Bool = false, eventLoop: any EventLoop) throws(EncryptedDNSError) {
        try self.init(url: url, trust: trust, usesGET: usesGET, eventLoop: eventLoop) { port in (.socket(opener, port: port), "\(url) \(description)") }
    }

    /// Reads the URL and sets TLS up; `reach` says, for the URL's port, how the server is
    /// reached and how it is described.
    private init(
        url: String, trust: DNSServerTrust, usesGET: Bool, eventLoop: any EventLoop, reach makeReach: (Int) throws(EncryptedDNSError) -> (Reach, String)
    ) throws(EncryptedDNSError) {
        self.usesGET = usesGET
        guard let parsed = DoHURL(url) else {
            throw .connectFailed(server: url, reason: "'\(url)' is not an https URL with a host name")
        }
        host = parsed.host
        authority = parsed.port == 443 ? parsed.host : "\(parsed.host):\(parsed.port)"
        path = parsed.path
        self.eventLoop = eventLoop
        (reach, serverDescription) = try makeReach(parsed.port)
        let tls = try trust.configuration(applicationProtocols: ["h2"])
        do { context = try NIOSSLContext(configuration: tls) } catch {
            throw .connectFailed(server: serverDescription, reason: "TLS cannot be set up: \(FailureText.reason(error))")
        }
    }

    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        let promise = eventLoop.makePromise(of: [UInt8].self)
        exchange(query, timeoutMilliseconds: timeoutMilliseconds) { promise.completeWith($0.mapError { $0 as any Error }) }
        return promise.futureResult
    }

    /// ``exchange(_:timeoutMilliseconds:)`` without a future: `completion` is called once, on
    /// the event loop. On the loop already (a query read there), the request starts at once.
    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int, completion: @escaping @Sendable (Result<[UInt8], EncryptedDNSError>) -> Void) {
        guard eventLoop.inEventLoop else {
            return eventLoop.execute { self.start(query, timeoutMilliseconds: timeoutMilliseconds, completion: completion) }
        }
        start(query, timeoutMilliseconds: timeoutMilliseconds, completion: completion)
    }

    public func shutdown() {
        eventLoop.execute {
            self.isShutDown = true
            self.connection?.whenSuccess { $0.channel.close(promise: nil) }
            self.connection = nil
        }
    }

    // MARK: On the event loop

    private func start(_ query: [UInt8], timeoutMilliseconds: Int, completion: @escaping (Result<[UInt8], EncryptedDNSError>) -> Void) {
        let prepared: DoHWireQuery
        do { prepared = try DoHWireQuery(query) } catch { return completion(.failure(error)) }
        let server = serverDescription
        let request = usesGET
            ? DoHRequest(method: "GET", authority: authority, path: Self.getPath(path, prepared.wire), body: [], mediaType: DoHRequest.dnsMessage, server: server)
            : DoHRequest(method: "POST", authority: authority, path: path, body: prepared.wire, mediaType: DoHRequest.dnsMessage, server: server)
        send(PendingRequest(request, timeoutMilliseconds: timeoutMilliseconds) { result in
            switch result {
            case .success(let body):
                do throws(EncryptedDNSError) { completion(.success(try prepared.answer(body, server: server))) } catch { completion(.failure(error)) }
            case .failure(let error):
                completion(.failure(error))
            }
        })
    }

    /// The GET form of a query (RFC 8484 §4.1, §6): `path?dns=` and the message in base64url
    /// without padding (RFC 4648 §5).
    static func getPath(_ path: String, _ message: [UInt8]) -> String {
        var encoded = Data(message).base64EncodedString()
        encoded = String(encoded.lazy.compactMap { character -> Character? in
            switch character {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: character
            }
        })
        return path + (path.contains("?") ? "&" : "?") + "dns=" + encoded
    }

    /// One HTTP exchange on a stream of the connection: `path` (with its query) on this URL's
    /// authority, the body (if any) of `mediaType`, whose answer must be of that type too.
    func send(method: String, path: String, body: [UInt8], mediaType: String, timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        let request = DoHRequest(method: method, authority: authority, path: path, body: body, mediaType: mediaType, server: serverDescription)
        let promise = eventLoop.makePromise(of: [UInt8].self)
        let pending = PendingRequest(request, timeoutMilliseconds: timeoutMilliseconds) { promise.completeWith($0.mapError { $0 as any Error }) }
        eventLoop.execute { self.send(pending) }
        return promise.futureResult
    }

    /// One request from its start to its answer, across its attempts (on the event loop only):
    /// its completion is called once — with the answer, the last attempt's failure, or the
    /// deadline's — and a stream it holds when the deadline comes is cancelled.
    private final class PendingRequest: @unchecked Sendable {
        // @unchecked: touched only on the upstream's event loop.
        let request: DoHRequest
        let timeoutMilliseconds: Int
        private var completion: ((Result<[UInt8], EncryptedDNSError>) -> Void)?
        /// When it fails as timed out (set at its first attempt).
        var deadline: NIODeadline?
        /// Whether it holds one of the connection's stream slots (from its dispatch until its
        /// stream ends or it is given up).
        var holdsSlot = false
        /// The stream it is on now, if any.
        var stream: (exchanges: DoHConnectionHandler, id: HTTP2StreamID)?
        var attempt = 1
        var isDone: Bool { completion == nil }

        init(_ request: DoHRequest, timeoutMilliseconds: Int, completion: @escaping (Result<[UInt8], EncryptedDNSError>) -> Void) {
            self.request = request
            self.timeoutMilliseconds = timeoutMilliseconds
            self.completion = completion
        }

        func complete(_ result: Result<[UInt8], EncryptedDNSError>) {
            guard let completion else { return }
            self.completion = nil
            completion(result)
        }
    }

    /// Starts an attempt of `pending` once a stream is free: at most `maximumStreams` at once on
    /// the connection; the rest wait their turn here (a server sends RST_STREAM to streams past
    /// its limits).
    private func send(_ pending: PendingRequest) {
        guard !isShutDown else { return pending.complete(.failure(.connectionClosed(server: serverDescription))) }
        if pending.deadline == nil {
            let deadline = NIODeadline.now() + .milliseconds(Int64(pending.timeoutMilliseconds))
            pending.deadline = deadline
            _ = deadlines.first(where: \.isDone)  // drops the answered ones at the front
            deadlines.add(pending, at: deadline)
            // A shorter timeout than the others' (another kind of request) moves the timer up.
            if let armed = deadlineTimer {
                if deadline < armed.at {
                    armed.timer.cancel()
                    armDeadlineTimer()
                }
            } else {
                armDeadlineTimer()
            }
        }
        if streamsInUse < Self.maximumStreams {
            streamsInUse += 1
            dispatch(pending)
        } else {
            waitingForStream.append(pending)
        }
    }

    /// Arms the timer for the first deadline of a request not yet done, if there is one.
    private func armDeadlineTimer() {
        guard let first = deadlines.first(where: { $0.isDone }) else {
            deadlineTimer = nil
            return
        }
        let timer = eventLoop.scheduleTask(deadline: first) { [self] in
            for pending in deadlines.removeDue(before: .now(), where: { $0.isDone }) { expire(pending) }
            armDeadlineTimer()
        }
        deadlineTimer = (timer, first)
    }

    /// A request whose deadline came: its stream (if any) is cancelled and it fails as timed out.
    private func expire(_ pending: PendingRequest) {
        if let (exchanges, id) = pending.stream { exchanges.cancel(id) }
        release(pending)
        pending.complete(.failure(.timedOut(server: serverDescription, milliseconds: pending.timeoutMilliseconds)))
    }

    /// Starts `pending` on the stream slot it holds: on the open connection at once (its frames
    /// leave with the next flush), else once one is open. The slot is given back when its stream
    /// ends, or at once if it is no longer wanted.
    private func dispatch(_ pending: PendingRequest) {
        pending.holdsSlot = true
        guard !pending.isDone else { return release(pending) }
        if let openedConnection, openedConnection.channel.isActive {
            return begin(pending, on: openedConnection.exchanges)
        }
        openConnection().whenComplete { [self] result in
            switch result {
            case .success(let connection):
                guard !pending.isDone else { return release(pending) }
                begin(pending, on: connection.exchanges)
            case .failure(let error):
                release(pending)
                retryOrComplete(pending, .failure((error as? EncryptedDNSError) ?? .connectFailed(server: serverDescription, reason: FailureText.reason(error))))
            }
        }
    }

    /// Puts `pending` on a stream of `exchanges`; its end (or a refusal, told at once) gives the
    /// slot back and sends it again or completes it.
    private func begin(_ pending: PendingRequest, on exchanges: DoHConnectionHandler) {
        let id = exchanges.start(pending.request) { [self] result in
            release(pending)
            retryOrComplete(pending, result)
        }
        if let id { pending.stream = (exchanges, id) }
    }

    /// Gives back the stream slot `pending` holds, if it holds one.
    private func release(_ pending: PendingRequest) {
        guard pending.holdsSlot else { return }
        pending.holdsSlot = false
        pending.stream = nil
        streamEnded()
    }

    /// A connection the server had closed (idle, GOAWAY, its own limits: unbound closes its
    /// HTTP/2 connections every thousand queries or so under load), or a stream it reset, is
    /// tried again, twice at most.
    private func retryOrComplete(_ pending: PendingRequest, _ result: Result<[UInt8], EncryptedDNSError>) {
        if case .failure(let failure) = result, pending.attempt < 3, failure.isWorthRetrying, !pending.isDone {
            pending.attempt += 1
            return send(pending)
        }
        pending.complete(result)
    }

    private func streamEnded() {
        if waitingForStream.isEmpty {
            streamsInUse -= 1
        } else {
            // Opened on the next turn of the loop, not from inside the ending stream's read.
            let next = waitingForStream.removeFirst()
            eventLoop.execute { self.dispatch(next) }
        }
    }

    /// The connection takes no new stream (the server said GOAWAY, RFC 9113 §6.8, or its stream
    /// IDs are spent): the next query opens another while the streams it still serves finish.
    private func retired(_ channel: any Channel) {
        if openedConnection?.channel === channel {
            connection = nil
            openedConnection = nil
        }
    }

    private func openConnection() -> EventLoopFuture<Connection> {
        // A connection that is closing (the server said GOAWAY or closed it) takes no new stream.
        if let openedConnection, !openedConnection.channel.isActive {
            connection = nil
            self.openedConnection = nil
        }
        if let connection { return connection }
        let context = self.context
        let host = self.host
        let server = serverDescription
        // The ALPN waiter is in the pipeline before the connection opens, and sets HTTP/2 up
        // inside the handshake-completed event: the server's SETTINGS may follow the handshake
        // in the same read, and an HTTP/2 handler added any later would miss it (and answer the
        // server's SETTINGS ACK with GOAWAY PROTOCOL_ERROR).
        let ready = eventLoop.makePromise(of: Connection.self)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: host))
                    try channel.pipeline.syncOperations.addHandler(ALPNWaiter(ready: ready) { channel in
                        // Frames, not a channel per stream (DoHConnectionHandler); the server
                        // opens no streams (push is off by default for clients that never enable it).
                        try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
                        let exchanges = DoHConnectionHandler { [weak self] in self?.retired(channel) }
                        try channel.pipeline.syncOperations.addHandler(exchanges)
                        return Connection(channel: channel, exchanges: exchanges)
                    })
                }
            }
        let connecting: EventLoopFuture<any Channel>
        switch reach {
        case .address(let address, let mark):
            connecting = UpstreamBootstrap.make(on: eventLoop, mark: mark).channelInitializer(initializer).connect(to: address)
        case .socket(let opener, let port):
            do {
                let socket = try opener(host, port)
                connecting = ClientBootstrap(group: eventLoop).channelInitializer(initializer).withConnectedSocket(socket)
            } catch {
                connecting = eventLoop.makeFailedFuture(error)
            }
        }
        let opening = connecting
            .flatMapError { error -> EventLoopFuture<any Channel> in
                ready.fail(error)
                return self.eventLoop.makeFailedFuture(error)
            }
            .flatMap { channel -> EventLoopFuture<Connection> in
                // The handshake must choose HTTP/2 before the connection is used.
                ready.futureResult.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
            .flatMapErrorThrowing { error -> Connection in
                if error is EncryptedDNSError { throw error }
                throw EncryptedDNSError.connectFailed(server: server, reason: FailureText.reason(error))
            }
        connection = opening
        opening.whenComplete { [self] result in
            switch result {
            case .success(let opened):
                if connection === opening { openedConnection = opened }
                opened.channel.closeFuture.whenComplete { [self] _ in
                    if connection === opening { connection = nil }
                    if openedConnection?.channel === opened.channel { openedConnection = nil }
                }
            case .failure:
                if connection === opening { connection = nil }
            }
        }
        return opening
    }
}

/// A DoH URL taken apart: `https://host[:port][/path]`.
struct DoHURL {
    var host: String
    var port: Int
    var path: String

    init?(_ text: String) {
        guard text.lowercased().hasPrefix("https://") else { return nil }
        let rest = text.dropFirst("https://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let hostPort = rest[..<slash]
        path = slash == rest.endIndex ? "/dns-query" : String(rest[slash...])
        if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasPrefix("[") {
            guard let port = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(port) else { return nil }
            self.port = port
            host = String(hostPort[..<colon])
        } else {
            port = 443
            host = String(hostPort)
        }
        guard !host.isEmpty, !host.contains("@"), !host.hasPrefix("["), IPPrefix.parseAddress(host) == nil else { return nil }
    }
}

/// Waits for the TLS handshake and requires ALPN's choice to be `h2` (RFC 8484 §5.2: HTTP/2 is
/// the minimum recommended), then leaves the pipeline.
private final class ALPNWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let ready: EventLoopPromise<DNSOverHTTPSUpstream.Connection>
    private let configure: (any Channel) throws -> DNSOverHTTPSUpstream.Connection

    init(ready: EventLoopPromise<DNSOverHTTPSUpstream.Connection>, configure: @escaping (any Channel) throws -> DNSOverHTTPSUpstream.Connection) {
        self.ready = ready
        self.configure = configure
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let protocolName) = event {
            if protocolName == "h2" {
                do {
                    let connection = try configure(context.channel)
                    context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
                    ready.succeed(connection)
                } catch {
                    ready.fail(error)
                }
            } else {
                ready.fail(EncryptedDNSError.httpFailure(server: "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", reason: "the server did not agree to HTTP/2 (ALPN \(protocolName ?? "none"))"))
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        ready.fail(EncryptedDNSError.connectFailed(server: "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")", reason: "the connection closed during the TLS handshake"))
        context.fireChannelInactive()
    }
}

