import Dispatch
import EncryptedDNS
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import Synchronization

/// netextd's DNS stub: while a tunnel with match domains is up, or system DNS settings are
/// enabled, the resolver file points at this listener (loopback, port 53, UDP and TCP — RFC
/// 7766: a truncated UDP answer is retried over TCP), and each query goes where `DNSRouting`
/// says — the tunnel's servers for names within its match domains, the system DNS settings'
/// servers (over TLS or HTTPS, through their answer cache) for theirs, the system's former
/// servers for everything else — so only those names are resolved through the tunnel (Apple's
/// `matchDomains`).
///
/// Queries to the tunnel's and the former servers are forwarded unchanged and their answers
/// relayed unchanged, on a thread each (at most `maximumInFlight`); UDP queries of the settings'
/// encrypted servers wait without a thread (at most `maximumWaitingOnServers`). A query no server
/// answers gets SERVFAIL. Malformed queries are dropped and counted; so are queries over a limit
/// (the client retries).
public final class DNSStub: Sendable {
    public struct Counters: Sendable, Hashable {
        public var forwardedToTunnel: UInt64 = 0
        public var forwardedToSystem: UInt64 = 0
        public var malformed: UInt64 = 0
        public var unanswered: UInt64 = 0
        public var busy: UInt64 = 0
        /// Queries the system DNS settings answered (over TLS, HTTPS, or their servers in the clear).
        public var forwardedBySettings: UInt64 = 0
        /// Of those, queries every encrypted server failed.
        public var encryptedFailures: UInt64 = 0
        /// Of those, queries then asked in the clear (the settings allow it).
        public var cleartextFallbacks: UInt64 = 0
        /// Of the settings' queries, those answered from the cache.
        public var cacheHits: UInt64 = 0
    }

    /// How the system DNS settings' names are answered: over these encrypted servers in order
    /// (none: their servers in the clear), then, if allowed, the former servers in the clear.
    public final class SettingsRoute: Sendable {
        /// The encrypted servers; nil: `cleartextServers` in the clear.
        public let upstreams: EncryptedDNSServerSet?
        /// The settings' servers, asked in the clear when there are no upstreams.
        public let cleartextServers: [String]
        public let cleartextFallback: [String]?
        /// The answers kept for these settings' names (new settings, new cache).
        let cache = ShardedAnswerCache()

        public init(upstreams: EncryptedDNSServerSet?, cleartextServers: [String], cleartextFallback: [String]?) {
            self.upstreams = upstreams
            self.cleartextServers = cleartextServers
            self.cleartextFallback = cleartextFallback
        }
    }

    public let address: SocketAddress
    public static let maximumInFlight = 128
    /// How long one upstream server has to answer before the next is tried.
    public static let upstreamTimeoutMilliseconds = 1500

    private let socket: UDPSocket
    /// Replies sent from the encrypted servers' event loops, many per system call.
    private let loopReplies: DNSLoopReplies
    private let tcpListener: TCPSocket
    /// The routing, and the system DNS settings' routes by the owner their `DNSRouting` entries
    /// carry: one lock, taken once a query.
    private let routes = Mutex(Routes())

    private struct Routes {
        var routing = DNSRouting()
        var settings: [String: SettingsRoute] = [:]

        /// The route for `name`, and the settings' route if it is theirs.
        func lookUp(_ name: String) -> (DNSRouting.Route, SettingsRoute?) {
            let route = routing.route(for: name)
            return (route, route.owner.flatMap { settings[$0] })
        }
    }
    private let counters = DNSStubCounters()
    private let inFlight = Mutex(0)
    /// UDP queries waiting for the settings' encrypted servers (no thread each).
    private let waitingOnServers = Atomic<Int>(0)
    /// Threads receiving UDP queries: one a core, at most four.
    static let receivingThreads = max(1, min(4, ProcessInfo.processInfo.activeProcessorCount))
    /// Datagrams a receiving thread takes per system call (`recvmmsg`); their cached answers
    /// leave together too (`sendmmsg`).
    static let datagramsPerRead = 16
    /// At most this many UDP queries wait for the encrypted servers; more are dropped and counted.
    public static let maximumWaitingOnServers = 4096
    private let lastServerWarning = Mutex(0.0)
    private let logger: Logger
    private let queue = DispatchQueue(label: "netextd.dns-stub", attributes: .concurrent)
    /// Called with each query's name before it is routed, on a forwarding thread; it may block
    /// (on-demand EvaluateConnection brings a VPN up first, then the query is routed anew).
    private let observer = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Sets the query observer.
    public func observeQueries(_ body: (@Sendable (String) -> Void)?) {
        observer.withLock { $0 = body }
    }

    /// The mark of queries for names a match domain routes (`SO_MARK`): a per-app VPN's
    /// resolver reaches the tunnel's servers through the tunnel's policy rule. nil: unmarked.
    private let tunnelMark: UInt32?
    /// The mark of every other query it sends (``DNSGuard/resolverMark``: the DNS guard lets
    /// them by); nil where marks cannot be set (no CAP_NET_ADMIN: tests without root).
    private let ownMark: UInt32? = DNSStub.canMark ? DNSGuard.resolverMark : nil

    /// Whether this process may mark its sockets, tried once on a throw-away socket.
    static let canMark: Bool = {
        guard let probe = try? UDPSocket(bindingTo: SocketAddress(address: [127, 0, 0, 1], port: 0), receiveBuffer: 4096, sendBuffer: 4096) else { return false }
        defer { probe.close() }
        return (try? probe.setMark(DNSGuard.resolverMark)) != nil
    }()
    /// Called with each answer from the tunnel's servers before it is relayed; it may block.
    private let answerObserver = Mutex<(@Sendable ([UInt8]) -> Void)?>(nil)

    /// Binds the listener (port 53 needs root or CAP_NET_BIND_SERVICE; port 0 takes a port free
    /// for UDP and TCP both, then `address` holds it). `device`: the listener takes only what
    /// arrives for that link (`SO_BINDTODEVICE`) — this machine's own queries to the address on it,
    /// never another machine's sent to that address.
    public init(address: SocketAddress, device: String? = nil, tunnelMark: UInt32? = nil, logger: Logger) throws(NetExtError) {
        self.logger = logger
        self.tunnelMark = tunnelMark
        (socket, tcpListener, self.address) = try Self.bindBoth(address)
        loopReplies = DNSLoopReplies(socket: socket)
        if let device {
            do throws(SystemError) {
                try InterfaceSocket.bind(socket.fd, to: device)
                try InterfaceSocket.bind(tcpListener.fd, to: device)
            } catch {
                socket.close()
                tcpListener.close()
                throw NetExtError(.connectionFailed, "cannot tie the DNS stub to its link \(device): \(error)")
            }
        }
    }

    /// The UDP socket and TCP listener on `address`. Port 0 lets the kernel pick the UDP port;
    /// its TCP twin may be taken by another process (seen under a loaded test run), so a few
    /// other picks are tried before giving up.
    private static func bindBoth(_ address: SocketAddress) throws(NetExtError) -> (UDPSocket, TCPSocket, SocketAddress) {
        let picks = address.port == 0 ? portPicks : 1
        var lastError: any Error = NetExtError(.connectionFailed, "no port tried")
        for _ in 0..<picks {
            let udp: UDPSocket
            do {
                udp = try UDPSocket(bindingTo: address, receiveBuffer: 1 << 20, sendBuffer: 1 << 20)
            } catch {
                throw NetExtError(.connectionFailed, "cannot start the DNS stub on \(address): \(error)")
            }
            let bound = address.port == 0 ? (udp.localAddress ?? address) : address
            do {
                return (udp, try TCPSocket.listen(on: bound), bound)
            } catch {
                udp.close()
                lastError = error
            }
        }
        throw NetExtError(.connectionFailed, "cannot start the DNS stub on \(address): \(lastError)")
    }

    /// Stubs for some apps' queries (the steering sends them there): one on a free port of
    /// 127.0.0.1, and one on the same port of ::1 when it is free too. Not started.
    static func onLoopback(tunnelMark: UInt32? = nil, logger: Logger) throws(NetExtError) -> (stubs: [DNSStub], address: FlowSteering.LoopbackResolver) {
        let ipv4 = try DNSStub(address: SocketAddress(address: [127, 0, 0, 1], port: 0), tunnelMark: tunnelMark, logger: logger)
        let loopback6 = [UInt8](repeating: 0, count: 15) + [1]
        let ipv6 = try? DNSStub(address: SocketAddress(address: loopback6, port: ipv4.address.port), tunnelMark: tunnelMark, logger: logger)
        return ([ipv4] + (ipv6.map { [$0] } ?? []), FlowSteering.LoopbackResolver(port: ipv4.address.port, hasIPv6: ipv6 != nil))
    }

    /// How many kernel-picked UDP ports are tried for one whose TCP twin is free too.
    static let portPicks = 16

    /// Sets the observer of answers from the tunnel's servers.
    public func observeAnswers(_ body: (@Sendable ([UInt8]) -> Void)?) {
        answerObserver.withLock { $0 = body }
    }

    /// Changes the routing and the system DNS settings' routes (by owner: how the names of that
    /// owner's routing entries are answered) under one lock: a query sees either the settings
    /// before or those after, never a moment with none, when its name would go in the clear.
    public func updateSettings(_ body: (inout DNSRouting, inout [String: SettingsRoute]) -> Void) {
        routes.withLock { body(&$0.routing, &$0.settings) }
    }

    /// The answer to `query` for the client, over UDP or TCP (`forward` asks the servers with
    /// the mark given): the query observer sees the name first, the servers are the routing's
    /// for it, an answer from the tunnel's is shown to the answer observer before it is
    /// returned, and no answer gives SERVFAIL. Names of the system DNS settings go over their
    /// encrypted servers.
    private func answer(
        _ query: DNSQuery, message: [UInt8], overUDP: Bool, forward: (_ servers: [String], _ mark: UInt32?) -> [UInt8]?
    ) -> [UInt8] {
        if let observe = observer.withLock({ $0 }) { observe(query.name) }
        let (route, settingsRoute) = routes.withLock { $0.lookUp(query.name) }
        if let settings = settingsRoute {
            counters.add(.forwardedBySettings)
            guard let reply = answerBySettings(message, query: query, settings: settings, overUDP: overUDP, forward: forward) else {
                counters.add(.unanswered)
                return query.serverFailure(for: message)
            }
            return reply
        }
        let throughTunnel = route.matched != nil
        counters.add(throughTunnel ? .forwardedToTunnel : .forwardedToSystem)
        guard let reply = forward(route.servers, throughTunnel ? tunnelMark : nil) else {
            counters.add(.unanswered)
            return query.serverFailure(for: message)
        }
        if throughTunnel, let observe = answerObserver.withLock({ $0 }) { observe(reply) }
        return reply
    }

    private func answerBySettings(
        _ message: [UInt8], query: DNSQuery, settings: SettingsRoute, overUDP: Bool, forward: (_ servers: [String], _ mark: UInt32?) -> [UInt8]?
    ) -> [UInt8]? {
        let now = Date().timeIntervalSince1970
        if let kept = settings.cache.answer(to: message, parsed: query, now: now) {
            counters.add(.cacheHits)
            return DNSMessageEditing.fitted(kept, forQuery: message, overUDP: overUDP)
        }
        guard let upstreams = settings.upstreams else {
            guard let answer = forward(settings.cleartextServers, nil) else { return nil }
            if DNSMessageEditing.mismatch(of: answer, to: message) == nil {
                settings.cache.store(answer, for: query, now: now)
            }
            return answer
        }
        let failures: EncryptedDNSServerSet.Failures
        switch upstreams.resolve(message, timeoutMilliseconds: Self.upstreamTimeoutMilliseconds) {
        case .success(let answer):
            settings.cache.store(answer, for: query, now: now)
            return DNSMessageEditing.fitted(answer, forQuery: message, overUDP: overUDP)
        case .failure(let errors): failures = errors
        }
        counters.add(.encryptedFailures)
        warnNoServerAnswered(failures)
        guard let fallback = settings.cleartextFallback, !fallback.isEmpty else { return nil }
        counters.add(.cleartextFallbacks)
        return forward(fallback, nil)
    }

    /// Serves on a thread of its own until `stop()`.
    public func start() {
        // One receiving thread a core: a cached answer is made on the thread that received the
        // query, so one thread would cap the rate at what one core does.
        for _ in 0..<Self.receivingThreads { Thread.detachNewThread { self.serve() } }
        Thread.detachNewThread { self.serveTCP() }
        logger.info("DNS stub listening", metadata: ["address": "\(address)"])
    }

    /// Closes the listener; queries being forwarded finish on their own.
    public func stop() {
        socket.close()
        tcpListener.shutdown()  // wakes the accept loop, which closes it
        let counts = counters.snapshot
        logger.info("DNS stub stopped", metadata: [
            "toTunnel": "\(counts.forwardedToTunnel)", "toSystem": "\(counts.forwardedToSystem)",
            "malformed": "\(counts.malformed)", "unanswered": "\(counts.unanswered)", "busy": "\(counts.busy)",
            "bySettings": "\(counts.forwardedBySettings)", "encryptedFailures": "\(counts.encryptedFailures)",
        ])
    }

    public var currentRouting: DNSRouting { routes.withLock { $0.routing } }
    public var currentCounters: Counters { counters.snapshot }

    /// Replaces the routing (tunnels coming and going).
    public func update(_ body: (inout DNSRouting) -> Void) {
        routes.withLock { body(&$0.routing) }
    }

    /// Takes a forwarding slot, or counts the query as dropped for being busy.
    private func admit() -> Bool {
        let admitted = inFlight.withLock { count -> Bool in
            guard count < Self.maximumInFlight else { return false }
            count += 1
            return true
        }
        if !admitted { counters.add(.busy) }
        return admitted
    }

    /// A receiving thread: queries taken many per system call, their cached answers sent
    /// together once the batch is handled.
    private func serve() {
        let receiver = DatagramReceiver(socket: socket, capacity: Self.datagramsPerRead)
        let replies = DNSReplyBatch(socket: socket)
        while !socket.isClosed {
            let filled: Int
            do {
                guard let count = try receiver.receive() else { return }
                filled = count
            } catch {
                if socket.isClosed { return }
                continue
            }
            receiver.forEachDatagram(in: filled) { index, datagram in
                guard let client = receiver.source(index) else { return }
                received(Array(datagram), from: client, replies: replies)
            }
            replies.flush()
        }
    }

    /// One UDP query: answered from the cache into `replies`, sent to the settings' encrypted
    /// servers without a thread, or forwarded on a thread of its own.
    private func received(_ message: [UInt8], from client: SocketAddress, replies: DNSReplyBatch) {
        let query: DNSQuery
        do { query = try DNSQuery(parsing: message) } catch {
            counters.add(.malformed)
            logger.debug("malformed DNS query dropped", metadata: ["error": "\(error)"])
            return
        }
        if observer.withLock({ $0 }) == nil, answerBySettingsWithoutWaiting(query, message: message, client: client, replies: replies) { return }
        guard admit() else { return }
        queue.async {
            defer { self.inFlight.withLock { $0 -= 1 } }
            let reply = self.answer(query, message: message, overUDP: true) { servers, mark in self.forward(message, id: query.id, to: servers, mark: mark) }
            self.reply(reply, to: client)
        }
    }

    // MARK: The settings' names over UDP, without a thread each

    /// Answers a UDP query for a name of the system DNS settings' encrypted servers on the
    /// receiving thread: from the cache at once (into `replies`), else when a server answers (the
    /// reply is sent from the connection's event loop, with the others of that turn), so thousands
    /// of queries can wait on one connection without a thread each. Returns false for every other
    /// query (the blocking path takes it).
    private func answerBySettingsWithoutWaiting(_ query: DNSQuery, message: [UInt8], client: SocketAddress, replies: DNSReplyBatch) -> Bool {
        guard let settings = routes.withLock({ $0.lookUp(query.name).1 }), let upstreams = settings.upstreams else { return false }
        let now = Date().timeIntervalSince1970
        // A client that sent no additional record sent no OPT record (most stub resolvers).
        let clientSentAdditional = message[10] != 0 || message[11] != 0
        if let kept = settings.cache.answer(to: message, parsed: query, now: now, withoutOPT: !clientSentAdditional) {
            counters.add(.forwardedBySettings)
            counters.add(.cacheHits)
            replies.add(kept.count <= 512 && !clientSentAdditional ? kept : DNSMessageEditing.fitted(kept, forQuery: message, overUDP: true), to: client)
            return true
        }
        counters.add(.forwardedBySettings)
        guard waitingOnServers.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumWaitingOnServers else {
            waitingOnServers.wrappingSubtract(1, ordering: .relaxed)
            counters.add(.busy)
            return true
        }
        upstreams.exchange(message, timeoutMilliseconds: Self.upstreamTimeoutMilliseconds) { result in
            defer { self.waitingOnServers.wrappingSubtract(1, ordering: .relaxed) }
            switch result {
            case .success(let answer):
                settings.cache.store(answer, for: query, now: now)
                self.loopReplies.send(DNSMessageEditing.fitted(answer, forQuery: message, overUDP: true), to: client)
            case .failure(let error):
                self.counters.add(.encryptedFailures)
                self.warnNoServerAnswered(error)
                guard let fallback = settings.cleartextFallback, !fallback.isEmpty else {
                    self.counters.add(.unanswered)
                    self.loopReplies.send(query.serverFailure(for: message), to: client)
                    return
                }
                self.counters.add(.cleartextFallbacks)
                // Plain forwarding blocks: not on the event loop.
                self.queue.async {
                    let answer = self.forward(message, id: query.id, to: fallback, mark: nil)
                    if answer == nil { self.counters.add(.unanswered) }
                    self.reply(answer ?? query.serverFailure(for: message), to: client)
                }
            }
        }
        return true
    }

    private func reply(_ message: [UInt8], to client: SocketAddress) {
        try? message.withUnsafeBytes { try socket.send($0, to: client) }
    }

    /// Logs that no encrypted server answered, at most once a second (a dead server under load
    /// would otherwise log each query).
    private func warnNoServerAnswered(_ error: any Error) {
        let now = Date().timeIntervalSince1970
        let due = lastServerWarning.withLock { last -> Bool in
            guard now - last >= 1 else { return false }
            last = now
            return true
        }
        if due { logger.warning("no encrypted DNS server answered", metadata: ["errors": "\(error)"]) }
    }

    // MARK: TCP (RFC 1035 §4.2.2: each message after a 2-byte length)

    private func serveTCP() {
        defer { tcpListener.close() }
        while !socket.isClosed {
            guard let connection = try? tcpListener.accept(waitMilliseconds: 500) else { continue }
            guard admit() else {
                connection.close()
                continue
            }
            queue.async {
                defer { self.inFlight.withLock { $0 -= 1 } }
                self.serve(connection)
            }
        }
    }

    /// Answers the queries on one client connection (at most 16, idle at most 5 s).
    private func serve(_ connection: TCPSocket) {
        defer { connection.close() }
        connection.setTimeouts(milliseconds: 5000)
        for _ in 0..<16 {
            guard let header = connection.read(exactly: 2) else { return }
            let length = Int(header[0]) << 8 | Int(header[1])
            guard length >= 12, let message = connection.read(exactly: length) else { return }
            let query: DNSQuery
            do { query = try DNSQuery(parsing: message) } catch {
                counters.add(.malformed)
                return
            }
            let reply = answer(query, message: message, overUDP: false) { servers, mark in forwardTCP(message, id: query.id, to: servers, mark: mark) }
            guard connection.write([UInt8(reply.count >> 8), UInt8(reply.count & 0xff)] + reply) else { return }
        }
    }

    private func forwardTCP(_ message: [UInt8], id: UInt16, to servers: [String], mark: UInt32?) -> [UInt8]? {
        for server in servers {
            guard let bytes = IPPrefix.parseAddress(server), bytes != address.address || address.port != 53,
                  let upstream = TCPSocket.connect(to: SocketAddress(address: bytes, port: 53), timeoutMilliseconds: Self.upstreamTimeoutMilliseconds, mark: mark ?? ownMark) else { continue }
            defer { upstream.close() }
            guard upstream.write([UInt8(message.count >> 8), UInt8(message.count & 0xff)] + message),
                  let header = upstream.read(exactly: 2), let reply = upstream.read(exactly: Int(header[0]) << 8 | Int(header[1])),
                  reply.count >= 12, UInt16(reply[0]) << 8 | UInt16(reply[1]) == id else { continue }
            return reply
        }
        return nil
    }

    /// Asks each server in turn; returns the first answer carrying the query's identifier.
    private func forward(_ message: [UInt8], id: UInt16, to servers: [String], mark: UInt32?) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_535)
        for server in servers {
            guard let bytes = IPPrefix.parseAddress(server), bytes != address.address || address.port != 53 else { continue }
            let upstream = SocketAddress(address: bytes, port: 53)
            guard let socket = try? UDPSocket(bindingTo: SocketAddress(address: [UInt8](repeating: 0, count: bytes.count), port: 0), receiveBuffer: 1 << 16, sendBuffer: 1 << 16) else { continue }
            defer { socket.close() }
            if let mark = mark ?? ownMark { guard (try? socket.setMark(mark)) != nil else { continue } }
            guard (try? socket.connect(to: upstream)) != nil,
                  (try? message.withUnsafeBytes({ try socket.send($0) })) != nil else { continue }
            socket.setReceiveTimeout(milliseconds: Self.upstreamTimeoutMilliseconds)
            let deadline = Date().addingTimeInterval(Double(Self.upstreamTimeoutMilliseconds) / 1000)
            while Date() < deadline {
                guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else { break }
                guard received.count >= 12, UInt16(buffer[0]) << 8 | UInt16(buffer[1]) == id, buffer[2] & 0x80 != 0 else { continue }
                return Array(buffer[..<received.count])
            }
        }
        return nil
    }
}
