import HTTPCapsules
import NIOSSL

/// One relay as a chain's client sees it: where it is and how it is trusted and spoken to.
public struct RelayEndpoint: Sendable {
    public var host: String
    public var port: Int
    /// The CAs its certificate must chain to (nil: the system's).
    public var trustRoots: NIOSSLTrustRoots?
    /// Fields added to every request (`NERelay.additionalHTTPHeaderFields`).
    public var additionalHeaders: [(name: String, value: String)]
    /// Its connect-udp URI template's path (RFC 9298 §2).
    public var udpPathTemplate: String
    /// DER SubjectPublicKeyInfos it is accepted by, instead of its chain and name (`NERelay.rawPublicKeys`).
    public var pinnedPublicKeys: [[UInt8]]
    /// The client certificate presented to it (`NERelay.identityData`).
    public var identity: RelayClientIdentity?
    /// Where fresh Privacy Pass tokens come from when it asks for one (nil: none are fetched).
    public var tokens: (any RelayTokenSource)?

    public init(
        host: String, port: Int, trustRoots: NIOSSLTrustRoots? = nil, additionalHeaders: [(name: String, value: String)] = [],
        udpPathTemplate: String = ConnectUDPTarget.pathPrefix + "{target_host}/{target_port}/", pinnedPublicKeys: [[UInt8]] = [],
        identity: RelayClientIdentity? = nil, tokens: (any RelayTokenSource)? = nil
    ) {
        self.tokens = tokens
        self.host = host
        self.port = port
        self.trustRoots = trustRoots
        self.additionalHeaders = additionalHeaders
        self.udpPathTemplate = udpPathTemplate
        self.pinnedPublicKeys = pinnedPublicKeys
        self.identity = identity
    }
}

/// A connection to a relay and what flows need of it, whatever carries them: HTTP/2 over TLS
/// (`RelayClient`) today. Apple's relays prefer HTTP/3 (`http3RelayURL`, CONNECT and
/// connect-udp over QUIC, datagrams as QUIC DATAGRAM frames); no QUIC package can be installed
/// here, so HTTP/3 is not built — when one can be, it is another conformance of this protocol,
/// and the provider and `RelayChain` stay as they are.
public protocol RelayTransport: Sendable {
    /// Whether the connection is still up (a chain reconnects when one of its links is not).
    var isConnected: Bool { get }
    /// Carries a connected socket's bytes to `host`:`port` through the relay (TCP); returns once
    /// the relay answered, throws its refusal. `ended` is called once the socket is closed.
    func carry(socket: Int32, toHost host: String, port: UInt16, ended: (@Sendable () -> Void)?) async throws
    /// Opens a UDP flow to `host`:`port` through the relay.
    func openUDP(toHost host: String, port: UInt16) async throws -> any RelayDatagramPath
    /// Reaches `next` through this relay (chained relays): `next` sees this relay's address.
    func connect(through next: RelayEndpoint) async throws -> any RelayTransport
    /// Closes the connection; its flows end with it.
    func close() async
}

/// A UDP flow through a relay: datagrams to the target and its answers.
public protocol RelayDatagramPath: Sendable {
    /// The target's answers, in order; finishes when the flow ends.
    var datagrams: AsyncStream<[UInt8]> { get }
    /// Sends one datagram; false (nothing sent) when it is too large or the flow has ended.
    @discardableResult func send(_ payload: [UInt8]) -> Bool
    /// Ends the flow.
    func close()
}

/// How a chain reaches its first relay.
public protocol RelayTransportMaker: Sendable {
    func connect(to endpoint: RelayEndpoint) async throws -> any RelayTransport
}

/// The first relay over HTTP/2 with TLS (`RelayClient`).
public struct HTTP2RelayTransportMaker: RelayTransportMaker {
    public init() {}

    public func connect(to endpoint: RelayEndpoint) async throws -> any RelayTransport {
        try await RelayClient.connect(
            host: endpoint.host, port: endpoint.port, trustRoots: endpoint.trustRoots, additionalHeaders: endpoint.additionalHeaders,
            udpPathTemplate: endpoint.udpPathTemplate, pinnedPublicKeys: endpoint.pinnedPublicKeys, identity: endpoint.identity,
            tokens: endpoint.tokens)
    }
}

extension RelayClient: RelayTransport {
    public func openUDP(toHost host: String, port: UInt16) async throws -> any RelayDatagramPath {
        try await openDatagramFlow(toHost: host, port: port)
    }

    public func connect(through next: RelayEndpoint) async throws -> any RelayTransport {
        try await connectThrough(
            toHost: next.host, port: next.port, trustRoots: next.trustRoots, additionalHeaders: next.additionalHeaders,
            udpPathTemplate: next.udpPathTemplate, pinnedPublicKeys: next.pinnedPublicKeys, identity: next.identity, tokens: next.tokens)
    }
}

extension RelayDatagramFlow: RelayDatagramPath {}
