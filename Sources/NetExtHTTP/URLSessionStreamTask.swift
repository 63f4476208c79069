import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A TCP connection to a host and port with reads and writes of bytes (Foundation's
/// `URLSessionStreamTask`, seed 002): reads of at least `min` and at most `max` bytes with a
/// timeout, writes with a timeout, TLS started on the open connection (STARTTLS), either
/// direction closed on its own. TLS started here is held to App Transport Security's TLS and
/// certificate rules for the host, as the session's loads are.
public final class URLSessionStreamTask: Sendable {
    /// What the task tells its delegate on Apple platforms, as a stream.
    public enum Event: Sendable, Equatable {
        /// The peer closed its side: reads after the buffered bytes return end of file.
        case readClosed
        /// This side's writing was closed.
        case writeClosed
        /// TLS is up (protocol version).
        case secureConnectionStarted(tlsVersion: String?)
        /// The machine would now reach the peer another way (`betterRouteDiscovered`: a
        /// network joined, a route changed); the connection stays as it is — opening a new task
        /// to the same host takes the new way. Told once per new way; not for a session with a
        /// `requiredInterface`.
        case betterRouteDiscovered
    }

    public let host: String
    public let port: Int
    /// The task's events, in order; ends when the task is cancelled or the connection closes.
    public let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let session: URLSessionStreamContext
    /// The open connection and the reader in its pipeline.
    private let connection: NIOLockedValueBox<(channel: any Channel, reader: StreamReadBuffer)?>
    /// Whether `closeWrite()` was called, and whether `.writeClosed` was told.
    private let writeClose = NIOLockedValueBox((requested: false, reported: false))
    /// Whether ``captureStreams()`` took the connection: the task's own reads and writes end.
    let captured = NIOLockedValueBox(false)

    init(host: String, port: Int, session: URLSessionStreamContext) {
        self.host = host
        self.port = port
        self.session = session
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
        connection = NIOLockedValueBox(nil)
    }

    /// A task on a connection already open (a data task's, after its server switched
    /// protocols): `reader` is in its pipeline.
    init(adopting channel: any Channel, reader: StreamReadBuffer, host: String, port: Int, session: URLSessionStreamContext) {
        self.host = host
        self.port = port
        self.session = session
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
        connection = NIOLockedValueBox((channel, reader))
        let sink = eventSink
        reader.onReadClosed = { sink.yield(.readClosed) }
        follow(channel)
    }

    /// What an open connection tells the task: better routes while it lives, and at its close
    /// `.writeClosed` (if asked for) and the end of the events.
    private func follow(_ channel: any Channel) {
        let routeWatch = session.configuration.requiredInterface == nil ? watchRoutes(of: channel) : nil
        channel.closeFuture.whenComplete { [self] _ in
            if let routeWatch { BetterRouteMonitor.shared.stopWatching(routeWatch) }
            reportWriteClosed()
            eventSink.finish()
        }
    }

    /// Opens the connection (a read or write opens it too).
    public func resume() async throws(HTTPLoadError) { _ = try await connected() }

    private var channel: (any Channel)? { connection.withLockedValue { $0?.channel } }

    /// Reads at least `minBytes` (unless the peer closes first) and at most `maxBytes`; waits at
    /// most `timeout` seconds. Returns the bytes and whether the peer has closed its side.
    public func readData(ofMinLength minBytes: Int, maxLength maxBytes: Int, timeout: Double) async throws(HTTPLoadError) -> (Data, atEOF: Bool) {
        guard minBytes >= 0, maxBytes >= max(minBytes, 1) else {
            throw .invalidConfiguration("a read needs 0 ≤ minimum ≤ maximum and a maximum of at least 1 (asked \(minBytes)…\(maxBytes))")
        }
        try refuseIfCaptured()
        let (channel, reader) = try await connected()
        do {
            return try await reader.read(
                min: minBytes, max: maxBytes, timeout: .milliseconds(Int64(timeout * 1000)), what: "\(host):\(port)", on: channel.eventLoop
            ).get()
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Writes all of `data`, waiting at most `timeout` seconds for it to be handed to the kernel.
    public func write(_ data: Data, timeout: Double) async throws(HTTPLoadError) {
        try refuseIfCaptured()
        let channel = try await connected().channel
        let promise = channel.eventLoop.makePromise(of: Void.self)
        let written = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(ByteBuffer(bytes: data), promise: written)
        let seconds = timeout
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(timeout * 1000))) {
            promise.fail(HTTPLoadError.timedOut(url: "\(self.host):\(self.port)", seconds: seconds))
        }
        written.futureResult.cascade(to: promise)
        do { try await promise.futureResult.always { _ in timer.cancel() }.get() } catch {
            throw Self.mapped(error)
        }
    }

    /// Starts TLS on the open connection (after a protocol's STARTTLS), under the session's
    /// trust and ATS's rules for the host; returns once the handshake is done and the session's
    /// delegate, if any, did not refuse the server (its server trust challenge).
    public func startSecureConnection() async throws(HTTPLoadError) {
        let channel = try await connected().channel
        let requirements = session.configuration.appTransportSecurity.requirements(for: host)
        let configuration = ATSTLSConfiguration.make(requirements, trust: session.configuration.trust, applicationProtocols: [])
        let context: NIOSSLContext
        do { context = try NIOSSLContext(configuration: configuration) } catch {
            throw .invalidConfiguration("TLS cannot be set up: \(TLSErrorText.describe(error))")
        }
        let host = self.host
        let done = channel.eventLoop.makePromise(of: String?.self)
        let added = channel.eventLoop.submit {
            let serverName = IPLiteral(host) == nil ? host : nil
            let tls = try NIOSSLClientHandler(context: context, serverHostname: serverName)
            try channel.pipeline.syncOperations.addHandler(tls, position: .first)
            try channel.pipeline.syncOperations.addHandler(StartTLSWaiter(done: done, host: host, requirements: requirements), position: .after(tls))
        }
        added.whenFailure { done.fail($0) }
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(Int64(session.configuration.timeoutIntervalForConnect * 1000))) {
            done.fail(HTTPLoadError.tlsFailed(host: host, reason: "the TLS handshake did not finish in time"))
        }
        let version: String?
        do {
            version = try await done.futureResult.always { _ in timer.cancel() }.get()
        } catch {
            channel.close(promise: nil)
            throw TLSErrorText.loadError(error, host: host, requirements: requirements)
        }
        // The session's delegate may refuse a server default evaluation trusted (its own pinning);
        // it cannot accept one default evaluation refused here: the handshake cannot be made again
        // on a connection in the middle of its protocol.
        if session.trustJudge.isSet, let leaf = try? await channel.nioSSL_peerCertificate().get()?.toDERBytes(),
            await session.trustJudge.refuses(trustedLeaf: leaf, for: HTTPOrigin(isSecure: true, host: host, port: port)) {
            channel.close(promise: nil)
            throw .cancelled
        }
        eventSink.yield(.secureConnectionStarted(tlsVersion: version))
    }

    /// Closes the reading side (no more bytes are taken from the peer).
    public func closeRead() {
        channel?.close(mode: .input, promise: nil)
    }

    /// Closes the writing side: the peer reads end of file. `.writeClosed` follows once the
    /// socket's output is shut — or once the connection has closed altogether, which closes the
    /// writing side too (a peer that closed first must not lose the event).
    public func closeWrite() {
        guard let channel else { return }
        writeClose.withLockedValue { $0.requested = true }
        channel.close(mode: .output).whenComplete { _ in self.reportWriteClosed() }
    }

    /// Yields `.writeClosed` once, if the writing side was asked to close.
    private func reportWriteClosed() {
        let first = writeClose.withLockedValue { state -> Bool in
            guard state.requested, !state.reported else { return false }
            state.reported = true
            return true
        }
        if first { eventSink.yield(.writeClosed) }
    }

    /// Closes the connection.
    public func cancel() {
        channel?.close(promise: nil)
        eventSink.finish()
    }

    // MARK: Connection

    /// Opens the connection: straight to the host, or through the session's proxy (an HTTP
    /// proxy's CONNECT tunnel, RFC 9110 §9.3.6, or SOCKS5, RFC 1928) as Foundation's stream
    /// tasks go through the system's proxies (seed 002). Through a proxy the name is the
    /// proxy's to resolve.
    func connected() async throws(HTTPLoadError) -> (channel: any Channel, reader: StreamReadBuffer) {
        if let open = connection.withLockedValue({ $0 }) { return open }
        let buffer = StreamReadBuffer()
        let sink = eventSink
        buffer.onReadClosed = { sink.yield(.readClosed) }
        let proxy = session.configuration.proxy
        var address: SocketAddress?
        if proxy == nil, let pinned = session.configuration.hostAddresses[host.lowercased()] {
            address = try? SocketAddress(ipAddress: pinned, port: port)
        }
        let eventLoop = session.eventLoopGroup.next()
        let tunnelUp = eventLoop.makePromise(of: Void.self)
        let connectTimeout = TimeAmount.milliseconds(Int64(session.configuration.timeoutIntervalForConnect * 1000))
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelInitializer { [host, port, requiredInterface = session.configuration.requiredInterface, proxyCredential = session.configuration.proxyCredential] channel in
                InterfaceBinding.bind(channel, to: requiredInterface).flatMapThrowing {
                    guard let proxy else {
                        try channel.pipeline.syncOperations.addHandler(buffer)
                        tunnelUp.succeed()
                        return
                    }
                    try channel.pipeline.syncOperations.addHandler(ProxyTunnelHandler(
                        proxy: proxy, credential: proxyCredential, host: host, port: port,
                        ready: { context in
                            do {
                                try context.pipeline.syncOperations.addHandler(buffer)
                                tunnelUp.succeed()
                            } catch { tunnelUp.fail(error) }
                        },
                        failed: { tunnelUp.fail($0) }))
                }
            }
        let opened: any Channel
        do {
            opened = try await (proxy.map { bootstrap.connect(host: $0.host, port: $0.port) }
                ?? address.map { bootstrap.connect(to: $0) } ?? bootstrap.connect(host: host, port: port)).get()
        } catch {
            tunnelUp.fail(error)
            throw .cannotConnect(host: proxy.map { "the proxy \($0)" } ?? "\(host):\(port)", reason: ConnectErrorText.describe(error))
        }
        // The tunnel gets as long as the connect did.
        let seconds = session.configuration.timeoutIntervalForConnect
        let timer = eventLoop.scheduleTask(in: connectTimeout) { [host, port] in
            tunnelUp.fail(HTTPLoadError.cannotConnect(host: "\(host):\(port) through the proxy", reason: "the proxy did not open the tunnel within \(seconds) s"))
        }
        do { try await tunnelUp.futureResult.always { _ in timer.cancel() }.get() } catch {
            opened.close(promise: nil)
            throw Self.mapped(error)
        }
        // Two readers racing to open: the first connection stays, the other is closed (and its
        // close ends nothing of the task's).
        let kept = connection.withLockedValue { current -> (channel: any Channel, reader: StreamReadBuffer) in
            if let current { return current }
            current = (opened, buffer)
            return (opened, buffer)
        }
        if kept.channel === opened { follow(opened) } else { opened.close(promise: nil) }
        return kept
    }

    private func refuseIfCaptured() throws(HTTPLoadError) {
        if captured.withLockedValue({ $0 }) {
            throw .invalidConfiguration("the stream task's connection was handed to Foundation streams (captureStreams); read and write those")
        }
    }

    /// Tells `.betterRouteDiscovered` when the kernel would reach the connection's peer (the
    /// proxy, through one) from another source address than the connection's.
    private func watchRoutes(of channel: any Channel) -> UUID {
        let local = channel.localAddress
        let peer = channel.remoteAddress
        let told = NIOLockedValueBox<String?>(nil)
        let sink = eventSink
        return BetterRouteMonitor.shared.watch {
            guard let peer, let now = BetterRouteMonitor.preferredSource(for: peer), now != local?.ipAddress else { return }
            let first = told.withLockedValue { previous -> Bool in
                defer { previous = now }
                return previous != now
            }
            if first { sink.yield(.betterRouteDiscovered) }
        }
    }

    private static func mapped(_ error: any Error) -> HTTPLoadError {
        if let failure = error as? HTTPLoadError { return failure }
        return .badServerResponse(url: "the stream", reason: "\(error)")
    }
}

extension URLSession {
    /// `streamTask(withHostName:port:)`: a byte stream to a host (opened by `resume()` or the
    /// first read or write).
    public func streamTask(withHostName host: String, port: Int) -> URLSessionStreamTask {
        URLSessionStreamTask(host: host, port: port, session: streamContext)
    }
}

/// What a stream task takes from its session.
struct URLSessionStreamContext: Sendable {
    var configuration: URLSessionConfiguration
    var eventLoopGroup: any EventLoopGroup
    /// The session's way to its delegate's server trust verdicts.
    var trustJudge: ServerTrustJudge
}
