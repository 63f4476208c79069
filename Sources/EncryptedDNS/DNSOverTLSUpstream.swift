import NIOCore
import NIOPosix
import NIOSSL
import NetExtCore

/// DNS over TLS (RFC 7858): one TLS connection to the server's address, port 853 unless told,
/// with its certificate checked against `serverName` (RFC 8310 §8's strict profile: no answer
/// without a verified server). Queries are pipelined on it (§3.3: each after a two-byte length,
/// answers in any order, matched by identifier), so netextd gives each query an identifier of
/// its own on the connection and puts the client's back on the answer. Queries are padded to
/// 128-byte blocks (RFC 8467 §4.1). A connection the server closed (§3.4: servers close idle
/// ones) is opened again by the next query; queries it took with it are sent once more.
public final class DNSOverTLSUpstream: EncryptedDNSUpstream, @unchecked Sendable {
    // @unchecked: every mutable member is touched only on `eventLoop`.
    public let serverDescription: String
    /// At most this many queries wait for answers at once; more fail as busy.
    public static let maximumPending = 4096

    /// The event loop its connection and futures live on.
    public let eventLoop: any EventLoop
    private let mark: UInt32?
    private let address: SocketAddress
    private let serverName: String?
    private let context: NIOSSLContext
    private var channel: (any Channel)?
    private var connecting: EventLoopFuture<any Channel>?
    private var pending: [UInt16: PendingQuery] = [:]
    private var nextID = UInt16.random(in: 0...UInt16.max)
    private var isShutDown = false
    /// A flush is queued on the event loop (writes since then leave with it).
    private var flushPending = false

    private struct PendingQuery {
        var promise: EventLoopPromise<[UInt8]>
        /// What goes on the wire (netextd's identifier, padded).
        var wire: [UInt8]
        var clientID: UInt16
        var timeout: Scheduled<Void>?
        var sends: Int
    }

    /// - Parameters:
    ///   - address: the server's IP address and port (853 for DoT).
    ///   - serverName: the name the server's certificate must carry (SNI too); nil checks the
    ///     certificate against the address.
    ///   - trust: whom the server's certificate must come from.
    ///   - mark: the connection's `SO_MARK` (netextd's resolver mark), nil for none.
    public init(address: SocketAddress, serverName: String?, trust: DNSServerTrust = .system, mark: UInt32? = nil, eventLoop: any EventLoop) throws(EncryptedDNSError) {
        self.address = address
        self.serverName = serverName
        self.eventLoop = eventLoop
        self.mark = mark
        let shown = "\(address.ipAddress ?? "?"):\(address.port ?? 853)"
        serverDescription = serverName.map { "tls://\($0)@\(shown)" } ?? "tls://\(shown)"
        let tls = try trust.configuration()
        do { context = try NIOSSLContext(configuration: tls) } catch {
            throw .connectFailed(server: serverDescription, reason: "TLS cannot be set up: \(FailureText.reason(error))")
        }
    }

    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        // On the loop already (a query read there): started at once, not a turn later.
        eventLoop.inEventLoop ? start(query, timeoutMilliseconds: timeoutMilliseconds) : eventLoop.flatSubmit { self.start(query, timeoutMilliseconds: timeoutMilliseconds) }
    }

    public func shutdown() {
        eventLoop.execute {
            self.isShutDown = true
            self.channel?.close(promise: nil)
            self.failAll(.connectionClosed(server: self.serverDescription))
        }
    }

    // MARK: On the event loop

    private func start(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        guard !isShutDown else { return eventLoop.makeFailedFuture(EncryptedDNSError.connectionClosed(server: serverDescription)) }
        guard pending.count < Self.maximumPending else { return eventLoop.makeFailedFuture(EncryptedDNSError.busy(server: serverDescription)) }
        guard let clientID = DNSMessageEditing.id(of: query) else { return eventLoop.makeFailedFuture(EncryptedDNSError.malformedQuery("shorter than a DNS header")) }
        var free = nextID
        while pending[free] != nil { free &+= 1 }
        let id = free
        nextID = id &+ 1
        let wire: [UInt8]
        do { wire = try DNSMessageEditing.padded(DNSMessageEditing.replacingID(of: query, with: id)) } catch {
            return eventLoop.makeFailedFuture(EncryptedDNSError.malformedQuery("\(error)"))
        }
        let promise = eventLoop.makePromise(of: [UInt8].self)
        var entry = PendingQuery(promise: promise, wire: wire, clientID: clientID, timeout: nil, sends: 0)
        entry.timeout = eventLoop.scheduleTask(in: .milliseconds(Int64(timeoutMilliseconds))) { [self] in
            guard let timedOut = pending.removeValue(forKey: id) else { return }
            timedOut.promise.fail(EncryptedDNSError.timedOut(server: serverDescription, milliseconds: timeoutMilliseconds))
        }
        pending[id] = entry
        send(id)
        return promise.futureResult
    }

    /// Writes the pending query `id` on the open connection, opening one if needed. Writes are
    /// flushed together once the event loop has run the tasks queued before the flush: under load
    /// many queries leave in one TLS write, not one system call each.
    private func send(_ id: UInt16) {
        guard var entry = pending[id] else { return }
        entry.sends += 1
        pending[id] = entry
        if let channel, channel.isActive {
            write(entry.wire, on: channel)
            return
        }
        connection().whenComplete { [self] result in
            switch result {
            case .success(let channel):
                guard let wire = pending[id]?.wire else { return }
                write(wire, on: channel)
            case .failure(let error):
                complete(id, with: .failure(error))
            }
        }
    }

    private func write(_ wire: [UInt8], on channel: any Channel) {
        var buffer = channel.allocator.buffer(capacity: wire.count + 2)
        buffer.writeInteger(UInt16(wire.count))
        buffer.writeBytes(wire)
        channel.write(buffer, promise: nil)
        guard !flushPending else { return }
        flushPending = true
        // Flushes the connection open then: writes always go to the current one (a reconnection
        // between this write and the flush has its own writes flushed too).
        eventLoop.execute { [self] in
            flushPending = false
            self.channel?.flush()
        }
    }

    private func connection() -> EventLoopFuture<any Channel> {
        if let channel, channel.isActive { return eventLoop.makeSucceededFuture(channel) }
        if let connecting { return connecting }
        let context = self.context
        let serverName = self.serverName
        let server = serverDescription
        let opening = UpstreamBootstrap.make(on: eventLoop, mark: mark)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: context, serverHostname: serverName)
                    try channel.pipeline.syncOperations.addHandlers([
                        tls, ByteToMessageHandler(DNSLengthFrameDecoder()), AnswerHandler(upstream: self),
                    ])
                }
            }
            .connect(to: address)
            .flatMapErrorThrowing { error -> any Channel in
                throw EncryptedDNSError.connectFailed(server: server, reason: FailureText.reason(error))
            }
        connecting = opening
        opening.whenComplete { [self] result in
            connecting = nil
            if case .success(let opened) = result { channel = opened }
        }
        return opening
    }

    fileprivate func received(_ message: ByteBuffer) {
        let answer = Array(message.readableBytesView)
        guard let id = DNSMessageEditing.id(of: answer), let entry = pending[id] else { return }
        if let reason = DNSMessageEditing.mismatch(of: answer, to: entry.wire) {
            complete(id, with: .failure(EncryptedDNSError.mismatchedAnswer(server: serverDescription, reason: reason)))
            return
        }
        complete(id, with: .success(DNSMessageEditing.replacingID(of: answer, with: entry.clientID)))
    }

    /// The connection is gone: queries it took are sent once more on a new one, the rest fail.
    fileprivate func closed(_ closedChannel: any Channel, error: (any Error)?) {
        if channel === closedChannel { channel = nil }
        guard !isShutDown else { return }
        for (id, entry) in pending {
            if entry.sends < 2 {
                send(id)
            } else {
                let failure = error.map { EncryptedDNSError.connectFailed(server: serverDescription, reason: FailureText.reason($0)) }
                complete(id, with: .failure(failure ?? .connectionClosed(server: serverDescription)))
            }
        }
    }

    private func complete(_ id: UInt16, with result: Result<[UInt8], any Error>) {
        guard let entry = pending.removeValue(forKey: id) else { return }
        entry.timeout?.cancel()
        entry.promise.completeWith(result)
    }

    private func failAll(_ error: EncryptedDNSError) {
        for id in Array(pending.keys) { complete(id, with: .failure(error)) }
    }

    /// Hands answers and the connection's end to the upstream.
    private final class AnswerHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private let upstream: DNSOverTLSUpstream
        private var error: (any Error)?

        init(upstream: DNSOverTLSUpstream) { self.upstream = upstream }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            upstream.received(unwrapInboundIn(data))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            self.error = error
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            upstream.closed(context.channel, error: error)
            context.fireChannelInactive()
        }
    }
}
