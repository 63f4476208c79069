import Foundation
import NIOCore
import NetExtProxies

/// Where a session's connections go first: an HTTP proxy (a CONNECT tunnel, RFC 9110 §9.3.6, for
/// https; the absolute URL as request target, RFC 9112 §3.2.2, for http) or a SOCKS5 proxy
/// (RFC 1928, no authentication, the name resolved by the proxy).
public enum ConnectionProxy: Sendable, Hashable, Codable, CustomStringConvertible {
    case http(host: String, port: Int)
    case socks5(host: String, port: Int)

    public var host: String { switch self { case .http(let host, _), .socks5(let host, _): host } }
    public var port: Int { switch self { case .http(_, let port), .socks5(_, let port): port } }

    public var description: String {
        switch self {
        case .http(let host, let port): "http://\(host):\(port)"
        case .socks5(let host, let port): "socks5://\(host):\(port)"
        }
    }

    /// Reads `http://HOST:PORT` or `socks5://HOST:PORT` (`socks5h://` too: names are always
    /// resolved by the proxy).
    public init(url text: String) throws(HTTPLoadError) {
        let lower = text.lowercased()
        let schemes = ["http://": false, "socks5://": true, "socks5h://": true]
        guard let (prefix, socks) = schemes.first(where: { lower.hasPrefix($0.key) }) else {
            throw .invalidConfiguration("the proxy '\(text)' is not http://HOST:PORT or socks5://HOST:PORT")
        }
        let rest = text.dropFirst(prefix.count).split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65_535).contains(port), colon != rest.startIndex else {
            throw .invalidConfiguration("the proxy '\(text)' has no port (http://HOST:PORT or socks5://HOST:PORT)")
        }
        var host = String(rest[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self = socks ? .socks5(host: host, port: port) : .http(host: host, port: port)
    }
}

/// Opens a tunnel through a proxy to `host:port` as the first thing on a new connection, then
/// takes itself out of the pipeline and calls `ready` (on the event loop, so the caller can put
/// TLS or HTTP in place before anything else is read).
final class ProxyTunnelHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State { case idle, greeting, authenticating, connecting, done }

    private let proxy: ConnectionProxy
    private let credential: URLCredential?
    private let host: String
    private let port: Int
    private let ready: (ChannelHandlerContext) -> Void
    private let failed: (HTTPLoadError) -> Void
    private var state = State.idle
    private var received = ByteBuffer()
    /// The longest answer a proxy may give before the tunnel is up.
    static let maximumAnswerBytes = 16 << 10

    init(
        proxy: ConnectionProxy, credential: URLCredential? = nil, host: String, port: Int, ready: @escaping (ChannelHandlerContext) -> Void,
        failed: @escaping (HTTPLoadError) -> Void
    ) {
        self.proxy = proxy
        self.credential = credential
        self.host = host
        self.port = port
        self.ready = ready
        self.failed = failed
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    private func start(_ context: ChannelHandlerContext) {
        guard state == .idle else { return }
        switch proxy {
        case .http:
            state = .connecting
            let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            // Basic credentials when the session has them (RFC 9110 §11.7.2, RFC 7617).
            let authorization = credential.map { "Proxy-Authorization: \($0.basicAuthorization)\r\n" } ?? ""
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\(authorization)\r\n")), promise: nil)
        case .socks5:
            state = .greeting
            // No authentication, and user name/password when there is a credential (RFC 1928 §3).
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: SOCKS5Handshake.greeting(offeringPassword: credential != nil))), promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
        guard received.readableBytes <= Self.maximumAnswerBytes else { return fail(context, "the proxy's answer is longer than 16 KiB") }
        switch proxy {
        case .http: readConnectAnswer(context)
        case .socks5: readSOCKSAnswer(context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if state != .done { fail(context, "the proxy closed the connection before the tunnel was up") }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context, "\(error)")
    }

    /// RFC 9110 §9.3.6: any 2xx answer to CONNECT opens the tunnel; the bytes after its head
    /// are the origin's.
    private func readConnectAnswer(_ context: ChannelHandlerContext) {
        let view = received.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10]) else { return }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            return fail(context, "the proxy's answer to CONNECT is not HTTP ('\(statusLine.prefix(80))')")
        }
        if status == 407 {
            return fail(context, credential == nil
                ? "the proxy wants a user name and password (407); give them with the session's proxyCredential"
                : "the proxy refused the user name and password (407)")
        }
        guard (200...299).contains(status) else {
            return fail(context, "the proxy refused CONNECT \(host):\(port) with \(statusLine.dropFirst(9))")
        }
        received.moveReaderIndex(to: received.readerIndex + (end.upperBound - view.startIndex))
        finish(context)
    }

    /// RFC 1928 §3 (method selection), §4 (CONNECT with a domain name or address), §6 (reply).
    private func readSOCKSAnswer(_ context: ChannelHandlerContext) {
        if state == .greeting {
            guard received.readableBytes >= 2, let reply = received.readBytes(length: 2) else { return }
            do {
                if try SOCKS5Handshake.passwordRequired(byMethodSelection: reply, offeredPassword: credential != nil), let credential {
                    state = .authenticating
                    let request = try SOCKS5Handshake.passwordRequest(username: credential.user, password: credential.password)
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: request)), promise: nil)
                    return
                }
            } catch {
                return fail(context, error.description)
            }
            sendSOCKSConnect(context)
            return
        }
        if state == .authenticating {
            // RFC 1929 §2: version 1, status 0 for success.
            guard received.readableBytes >= 2, let reply = received.readBytes(length: 2) else { return }
            do { try SOCKS5Handshake.checkPasswordReply(reply) } catch { return fail(context, error.description) }
            sendSOCKSConnect(context)
            return
        }
        readSOCKSConnectReply(context)
    }

    /// RFC 1928 §4: CONNECT with the host's address, or its name for the proxy to resolve.
    private func sendSOCKSConnect(_ context: ChannelHandlerContext) {
        state = .connecting
        do {
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: try SOCKS5Handshake.connectRequest(host: host, port: UInt16(port)))), promise: nil)
        } catch {
            fail(context, error.description)
        }
    }

    /// RFC 1928 §6: the reply, its bound address skipped.
    private func readSOCKSConnectReply(_ context: ChannelHandlerContext) {
        guard received.readableBytes >= 5, let header = received.getBytes(at: received.readerIndex, length: 5) else { return }
        guard header[0] == 5 else { return fail(context, "the SOCKS proxy's reply is not SOCKS5") }
        guard header[1] == 0 else { return fail(context, "the SOCKS proxy could not connect to \(host):\(port): \(SOCKS5Handshake.replyText(header[1]))") }
        let addressLength: Int
        switch header[3] {
        case 1: addressLength = 4
        case 4: addressLength = 16
        case 3: addressLength = 1 + Int(header[4])
        default: return fail(context, "the SOCKS proxy's reply has address type \(header[3])")
        }
        let total = 4 + addressLength + 2
        guard received.readableBytes >= total else { return }
        received.moveReaderIndex(forwardBy: total)
        finish(context)
    }

    private func finish(_ context: ChannelHandlerContext) {
        state = .done
        let leftover = received
        received = ByteBuffer()
        ready(context)
        if leftover.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(leftover)) }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func fail(_ context: ChannelHandlerContext, _ reason: String) {
        guard state != .done else { return }
        state = .done
        failed(.cannotConnect(host: "\(host):\(port) through the proxy \(proxy)", reason: reason))
        context.close(promise: nil)
    }
}
