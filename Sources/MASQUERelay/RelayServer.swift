import HTTPServing
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// `netext-server relay`'s listener: TLS with ALPN `h2` then `http/1.1` (HTTP/3 waits for an
/// installable QUIC package), HTTP/2 with extended CONNECT enabled
/// (`SETTINGS_ENABLE_CONNECT_PROTOCOL = 1`, RFC 8441 §3) and a `RelayStreamHandler` in each
/// stream; a client that negotiates `http/1.1` or nothing gets one classic CONNECT tunnel
/// (`RelayHTTP1ConnectHandler`).
public final class RelayServer: Sendable {
    private let channel: any Channel
    private let usage: HTTPServerUsage
    public let counters: RelayCounters

    /// Connections open now.
    public var openConnections: Int { usage.openConnections }

    /// The port it listens on (the one asked, or the one the kernel chose for 0).
    public var port: Int { channel.localAddress?.port ?? 0 }

    private init(channel: any Channel, usage: HTTPServerUsage, counters: RelayCounters) {
        self.channel = channel
        self.usage = usage
        self.counters = counters
    }

    /// Listens on `host`:`port`. With `ipRouter`, connect-ip is served through it; without, it
    /// is answered 501. With `clientCAFile` (PEM), every client must present a certificate that
    /// chains to one of its CAs (mutual TLS), and such a client needs no token.
    public static func start(
        host: String, port: Int, tls: ServerTLS, policy: RelayPolicy, ipRouter: ConnectIPRouter? = nil, limits: RelayLimits = RelayLimits(),
        clientCAFile: String? = nil, logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> RelayServer {
        var clientCAs: [NIOSSLCertificate] = []
        if let clientCAFile {
            guard let read = try? NIOSSLCertificate.fromPEMFile(clientCAFile), !read.isEmpty else {
                throw RelayClient.Failure(description: "the client CA file \(clientCAFile) holds no readable PEM certificate", status: nil)
            }
            clientCAs = read
        }
        let context = try tls.makeContext(applicationProtocols: ["h2", "http/1.1"], clientCAs: clientCAs)
        // A client whose certificate chains to the client CAs is admitted by it (no token asked).
        let certificateAdmits = !clientCAs.isEmpty
        let counters = RelayCounters()
        var serverLimits = HTTPServerLimits()
        serverLimits.maximumConnections = limits.maximumConnections
        serverLimits.maximumConnectionsPerSource = limits.maximumConnectionsPerClient
        let usage = HTTPServerUsage(limits: serverLimits)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(RelayConnectionGate(usage: usage, counters: counters, handshakeDeadline: limits.handshakeDeadline))
                    try channel.pipeline.syncOperations.addHandler(ApplicationProtocolNegotiationHandler { result, channel in
                        channel.eventLoop.makeCompletedFuture {
                            if case .negotiated("h2") = result {
                                try Self.configureHTTP2(
                                    channel, policy: policy, admission: RelayConnectionAdmission(admitted: certificateAdmits), ipRouter: ipRouter, limits: limits,
                                    counters: counters, logger: logger)
                            } else {
                                // http/1.1, or no ALPN: one classic CONNECT tunnel.
                                let decoder = RelayHTTP1ConnectHandler.decoder()
                                try channel.pipeline.syncOperations.addHandler(decoder)
                                try channel.pipeline.syncOperations.addHandler(RelayHTTP1ConnectHandler(
                                    policy: policy, admission: RelayConnectionAdmission(admitted: certificateAdmits), counters: counters, logger: logger,
                                    headDeadline: limits.handshakeDeadline, decoder: decoder))
                            }
                        }
                    })
                }
            }
            .bind(host: host, port: port)
            .get()
        return RelayServer(channel: channel, usage: usage, counters: counters)
    }

    /// `limits`' concurrent streams a connection, the relay's windows (`RelayHTTP2Settings`),
    /// extended CONNECT, and the close of a connection idle without streams.
    static func configureHTTP2(
        _ channel: any Channel, policy: RelayPolicy, admission: RelayConnectionAdmission, ipRouter: ConnectIPRouter?, limits: RelayLimits,
        counters: RelayCounters, logger: Logger
    ) throws {
        let idleCloser = RelayIdleConnectionCloser(idleSeconds: limits.idleDeadline, counters: counters)
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server,
            connectionConfiguration: RelayHTTP2Settings.connection(extendedConnect: true, maximumStreams: limits.maximumStreamsPerConnection),
            streamConfiguration: RelayHTTP2Settings.stream
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                idleCloser.opened(stream)
                try stream.pipeline.syncOperations.addHandler(
                    RelayStreamHandler(policy: policy, admission: admission, ipRouter: ipRouter, counters: counters, logger: logger))
            }
        }
        try channel.pipeline.syncOperations.addHandler(idleCloser)
    }

    /// Stops listening (open tunnels close with their connections).
    public func stop() async {
        try? await channel.close()
    }
}
