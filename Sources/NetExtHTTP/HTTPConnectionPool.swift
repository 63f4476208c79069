import NIOCore
import NIOPosix
import NIOSSL

/// A session's connections, kept per origin and ATS requirements: one HTTP/2 connection shared
/// by every load of an origin (RFC 9113 §9.1: "clients SHOULD NOT open more than one HTTP/2
/// connection to a given host and port pair"), or idle HTTP/1.1 ones kept alive for the next
/// load, at most `maximumConnectionsPerHost` per origin (more loads wait for one to come back).
/// While the first connection to an origin is being opened, loads to it wait to learn whether it
/// speaks HTTP/2 rather than each opening their own.
actor HTTPConnectionPool {
    struct Key: Hashable {
        var origin: HTTPOrigin
        var requirements: ATSRequirements
    }

    private let eventLoopGroup: any EventLoopGroup
    private let trust: HTTPTrust
    private let allowsHTTP2: Bool
    private let connectTimeout: TimeAmount
    private let addresses: [String: String]
    private let proxy: ConnectionProxy?
    private let proxyCredential: URLCredential?
    private let requiredInterface: String?
    /// The session's delegate, asked about each new TLS connection's server.
    let trustJudge = ServerTrustJudge()
    /// Servers the delegate accepted where default evaluation did not: their leaf certificates,
    /// trusted for the session's later connections to the origin (and only those leaves).
    private var acceptedLeaves: [HTTPOrigin: [UInt8]] = [:]
    private var shared: [Key: HTTPConnection] = [:]
    private var idle: [Key: [HTTPConnection]] = [:]
    /// HTTP/1.1 connections carrying a load now (closed by ``shutdown()``, which cancels it).
    private var leased: [ObjectIdentifier: HTTPConnection] = [:]
    private var opening: [Key: Task<HTTPConnection, any Error>] = [:]
    private var contexts: [ATSRequirements: NIOSSLContext] = [:]
    /// HTTP/1.1 connections open, leased or being opened, per key; and the loads waiting for one.
    private var http1Count: [Key: Int] = [:]
    private var waiting: [Key: CircularBuffer<CheckedContinuation<Void, Never>>] = [:]
    private let maximumConnectionsPerHost: Int
    /// Connections opened since the pool was made (the multiplexing figure counts them).
    private(set) var connectionsOpened = 0
    private var isShutDown = false

    init(
        eventLoopGroup: any EventLoopGroup, trust: HTTPTrust, allowsHTTP2: Bool, connectTimeout: TimeAmount, addresses: [String: String],
        maximumConnectionsPerHost: Int, proxy: ConnectionProxy?, proxyCredential: URLCredential? = nil, requiredInterface: String? = nil
    ) {
        self.proxy = proxy
        self.proxyCredential = proxyCredential
        self.requiredInterface = requiredInterface
        self.maximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        self.eventLoopGroup = eventLoopGroup
        self.trust = trust
        self.allowsHTTP2 = allowsHTTP2
        self.connectTimeout = connectTimeout
        self.addresses = addresses
    }

    /// A connection for `key`, and whether it had carried a load before.
    func lease(_ key: Key) async throws -> (HTTPConnection, reused: Bool) {
        if isShutDown { throw HTTPLoadError.cancelled }
        if let connection = shared[key] {
            if connection.isUsable { return (connection, true) }
            shared[key] = nil
        }
        if let connection = takeIdle(key) { return leasing(connection, reused: true) }
        if let first = opening[key] {
            let connection = try await first.value
            if connection.isHTTP2 && connection.isUsable { return (connection, true) }
        }
        // At the limit: wait for a connection to come back (or to close), then look again.
        while http1Count[key, default: 0] >= maximumConnectionsPerHost {
            await withCheckedContinuation { waiting[key, default: []].append($0) }
            if isShutDown { throw HTTPLoadError.cancelled }
            if let connection = takeIdle(key) { return leasing(connection, reused: true) }
        }
        http1Count[key, default: 0] += 1
        let task = Task { try await self.open(key) }
        let first = opening[key] == nil
        if first { opening[key] = task }
        defer { if first { opening[key] = nil } }
        let connection: HTTPConnection
        do { connection = try await task.value } catch {
            http1Ended(key)
            throw error
        }
        connectionsOpened += 1
        if connection.isHTTP2 {
            http1Ended(key)
            shared[key] = connection
            return (connection, false)
        }
        if isShutDown {
            connection.close()
            http1Ended(key)
            throw HTTPLoadError.cancelled
        }
        return leasing(connection, reused: false)
    }

    private func leasing(_ connection: HTTPConnection, reused: Bool) -> (HTTPConnection, reused: Bool) {
        leased[ObjectIdentifier(connection)] = connection
        return (connection, reused)
    }

    /// An idle HTTP/1.1 connection that is still open; closed ones found on the way are counted out.
    private func takeIdle(_ key: Key) -> HTTPConnection? {
        // Taken out in place: a copy of the list would be copied again by the pop.
        while let connection = idle[key]?.popLast() {
            if connection.isUsable { return connection }
            http1Ended(key)
        }
        return nil
    }

    /// One HTTP/1.1 connection fewer for `key`: a waiting load may open one.
    private func http1Ended(_ key: Key) {
        http1Count[key, default: 1] -= 1
        wakeOne(key)
    }

    private func wakeOne(_ key: Key) {
        // In place, first come first served: taking the list out of the dictionary and putting
        // it back copied all of it per wake (quadratic in the loads waiting).
        guard let next = waiting[key]?.popFirst() else { return }
        if waiting[key]?.isEmpty == true { waiting[key] = nil }
        next.resume()
    }

    /// Gives an HTTP/1.1 connection back after a load (HTTP/2 ones stay shared).
    func release(_ connection: HTTPConnection, _ key: Key, reusable: Bool) {
        guard !connection.isHTTP2 else { return }
        leased[ObjectIdentifier(connection)] = nil
        guard reusable, connection.isUsable, !isShutDown else {
            connection.close()
            http1Ended(key)
            return
        }
        idle[key, default: []].append(connection)
        wakeOne(key)
    }

    func shutdown() {
        isShutDown = true
        for connection in shared.values { connection.close() }
        for list in idle.values { for connection in list { connection.close() } }
        for connection in leased.values { connection.close() }
        leased = [:]
        shared = [:]
        idle = [:]
        for list in waiting.values { for waiter in list { waiter.resume() } }
        waiting = [:]
    }

    private func open(_ key: Key) async throws -> HTTPConnection {
        var address: SocketAddress?
        if let pinned = addresses[key.origin.host.lowercased()] {
            do { address = try SocketAddress(ipAddress: pinned, port: key.origin.port) } catch {
                throw HTTPLoadError.invalidConfiguration("the address \(pinned) given for \(key.origin.host) is not an IP address")
            }
        }
        let context = key.origin.isSecure ? try self.context(for: key.requirements) : nil
        let eventLoop = eventLoopGroup.next()
        let open: @Sendable ([UInt8]?) async throws -> HTTPConnection = { [address, proxy, proxyCredential, connectTimeout, requiredInterface] acceptedLeaf in
            try await HTTPConnection.open(
                to: key.origin, address: address, proxy: proxy, proxyCredential: proxyCredential, context: context, requirements: key.requirements,
                connectTimeout: connectTimeout, eventLoop: eventLoop, requiredInterface: requiredInterface, acceptedLeaf: acceptedLeaf
            ).get()
        }
        if let accepted = acceptedLeaves[key.origin] {
            do { return try await open(accepted) } catch {
                // Another certificate now: the delegate is asked again.
                acceptedLeaves[key.origin] = nil
                throw error
            }
        }
        let (connection, accepted) = try await ServerTrustGate.open(
            origin: key.origin, requirements: key.requirements, judge: trustJudge, address: address, connectTimeout: connectTimeout, eventLoop: eventLoop,
            requiredInterface: requiredInterface, open: open)
        if let accepted { acceptedLeaves[key.origin] = accepted }
        return connection
    }

    /// One TLS context per set of requirements (making one reads the trust roots).
    private func context(for requirements: ATSRequirements) throws -> NIOSSLContext {
        if let context = contexts[requirements] { return context }
        let configuration = ATSTLSConfiguration.make(requirements, trust: trust, applicationProtocols: allowsHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"])
        do {
            let context = try NIOSSLContext(configuration: configuration)
            contexts[requirements] = context
            return context
        } catch {
            throw HTTPLoadError.invalidConfiguration("TLS cannot be set up: \(TLSErrorText.describe(error))")
        }
    }
}
