import NIOCore
import NIOPosix
import NIOSSL

/// A session's connections, kept per origin and ATS requirements: one HTTP/2 connection shared
/// by every load of an origin (RFC 9113 §9.1: "clients SHOULD NOT open more than one HTTP/2
/// connection to a given host and port pair"), or idle HTTP/1.1 ones kept alive for the next
/// load. While the first connection to an origin is being opened, loads to it wait to learn
/// whether it speaks HTTP/2 rather than each opening their own.
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
    private var shared: [Key: HTTPConnection] = [:]
    private var idle: [Key: [HTTPConnection]] = [:]
    private var opening: [Key: Task<HTTPConnection, any Error>] = [:]
    private var contexts: [ATSRequirements: NIOSSLContext] = [:]
    /// Connections opened since the pool was made (the multiplexing figure counts them).
    private(set) var connectionsOpened = 0
    private var isShutDown = false

    init(eventLoopGroup: any EventLoopGroup, trust: HTTPTrust, allowsHTTP2: Bool, connectTimeout: TimeAmount, addresses: [String: String]) {
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
        while var list = idle[key], let connection = list.popLast() {
            idle[key] = list
            if connection.isUsable { return (connection, true) }
        }
        if let first = opening[key] {
            let connection = try await first.value
            if connection.isHTTP2 && connection.isUsable { return (connection, true) }
        }
        let task = Task { try await self.open(key) }
        let waiting = opening[key] == nil
        if waiting { opening[key] = task }
        defer { if waiting { opening[key] = nil } }
        let connection = try await task.value
        connectionsOpened += 1
        if connection.isHTTP2 { shared[key] = connection }
        return (connection, false)
    }

    /// Gives an HTTP/1.1 connection back after a load (HTTP/2 ones stay shared).
    func release(_ connection: HTTPConnection, _ key: Key, reusable: Bool) {
        guard !connection.isHTTP2 else { return }
        guard reusable, connection.isUsable, !isShutDown else {
            connection.close()
            return
        }
        idle[key, default: []].append(connection)
    }

    func shutdown() {
        isShutDown = true
        for connection in shared.values { connection.close() }
        for list in idle.values { for connection in list { connection.close() } }
        shared = [:]
        idle = [:]
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
        do {
            return try await HTTPConnection.open(
                to: key.origin, address: address, context: context, requirements: key.requirements,
                connectTimeout: connectTimeout, eventLoop: eventLoop
            ).get()
        } catch HTTPLoadError.tlsFailed(let host, let reason) where reason == TLSErrorText.untrustedCertificate {
            // BoringSSL says only that verification failed: find out why.
            let why = await CertificateTrustProbe.explain(key.origin, address: address, connectTimeout: connectTimeout, eventLoop: eventLoop)
            throw HTTPLoadError.tlsFailed(host: host, reason: why ?? reason)
        }
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
