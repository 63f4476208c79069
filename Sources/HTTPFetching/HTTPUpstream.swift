import AsyncHTTPClient
import Dispatch
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Sends requests to another server — the relay to its gateway, the gateway to its targets, an
/// origin to its issuer's directory, a client to the relay — through AsyncHTTPClient: pooled
/// keep-alive connections, HTTP/2 when the server offers it in ALPN (HTTPS) and HTTP/1.1
/// otherwise, TLS checked against the trust given at init (`ClientTLS`, by default the system's
/// trust store). Only the headers the caller names are sent; no cookies, no cache, no
/// redirects followed, no proxy from the environment, no credentials of its own.
public final class HTTPUpstream: Sendable {
    /// Why no answer came.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case timedOut(seconds: Int)
        case unreachable(String)

        public var description: String {
            switch self {
            case let .timedOut(seconds): "no answer within \(seconds) s"
            case let .unreachable(reason): reason
            }
        }
    }

    /// The largest answer taken; a larger one fails the exchange (an evaluation key upload is
    /// answered in bytes, a PIR response is a few hundred KiB).
    public static let maximumBody = 32 << 20

    let client: HTTPClient
    let timeout: Double
    /// The largest answer this upstream takes (at most `maximumBody`).
    let bodyLimit: Int

    /// `tls`: whom HTTPS upstreams must prove themselves to (default: the system trust store).
    /// `timeout` bounds each exchange, from the connection to the answer's last byte;
    /// `bodyLimit` the answer's size (a larger one fails the exchange).
    public init(timeout: Double = 30, tls: ClientTLS? = nil, bodyLimit: Int = HTTPUpstream.maximumBody) {
        self.timeout = timeout
        self.bodyLimit = min(max(bodyLimit, 0), Self.maximumBody)
        let bound = TimeAmount.milliseconds(Int64(timeout * 1000))
        var pool = HTTPClient.Configuration.ConnectionPool(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        // A refused or failed connection fails the requests waiting for it at once, with its
        // reason, instead of being retried with backoff until their deadline.
        pool.retryConnectionEstablishment = false
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls?.configuration ?? ClientTLS.configuration(trusting: .default),
            redirectConfiguration: .disallow,
            timeout: .init(connect: bound, read: bound),
            connectionPool: pool,
            proxy: nil,
            ignoreUncleanSSLShutdown: false,
            decompression: .disabled)
        configuration.httpVersion = .automatic
        client = HTTPClient(
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration,
            backgroundActivityLogger: Logger(label: "netext.http-upstream", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    deinit {
        // Closes the pooled connections; nothing waits for it.
        client.shutdown { _ in }
    }

    /// Sends one request and returns the answer, whatever its status; `headers` are the only
    /// header fields added by the caller. `http` and `https` URLs only.
    public func exchange(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async throws(Failure) -> HTTPServerResponse {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw .unreachable("\(url.absoluteString) is not an http or https URL")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in headers {
            let lowered = name.lowercased()
            guard lowered != "host", lowered != "content-length", lowered != "connection", lowered != "transfer-encoding" else { continue }
            request.headers.add(name: name, value: value)
        }
        if !body.isEmpty || method == "POST" || method == "PUT" { request.body = .bytes(body) }
        do {
            let response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            let content = try await response.body.collect(upTo: bodyLimit)
            return HTTPServerResponse(
                status: Int(response.status.code), headers: response.headers.map { (name: $0.name, value: $0.value) },
                body: Array(content.readableBytesView))
        } catch { throw Self.failure(error, host: host, port: url.port ?? (scheme == "https" ? 443 : 80), timeout: timeout) }
    }

    /// AsyncHTTPClient's, NIO's and BoringSSL's errors as one of ours, with a sentence.
    static func failure(_ error: any Error, host: String, port: Int, timeout: Double) -> Failure {
        if let client = error as? HTTPClientError {
            switch client {
            case .deadlineExceeded, .readTimeout, .writeTimeout: return .timedOut(seconds: Int(timeout))
            case .connectTimeout: return .unreachable("\(host):\(port): no connection within \(Int(timeout)) s")
            case .remoteConnectionClosed: return .unreachable("\(host): the server closed the connection before its whole answer arrived")
            case .invalidURL, .emptyHost, .emptyScheme: return .unreachable("\(host): the URL is not one this client can send to")
            default: return .unreachable("\(host): \(client)")
            }
        }
        if error is NIOTooManyBytesError { return .unreachable("\(host): the answer is larger than this client accepts") }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return .unreachable("\(host): TLS: \(TLSFailure.describe(error))")
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return .unreachable("\(host):\(port): \(ConnectFailureText.reason(error))")
        }
        return .unreachable("\(host): \(error)")
    }

    /// As `exchange`, with failures answered 504 (timeout) or 502, so that a forwarding role
    /// always has a response to pass on.
    /// `observe` learns each exchange's duration and failure (metrics).
    public func send(
        method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8],
        observe: ((_ nanoseconds: UInt64, _ failure: Failure?) -> Void)? = nil
    ) async -> HTTPServerResponse {
        let started = DispatchTime.now().uptimeNanoseconds
        do throws(Failure) {
            let answer = try await exchange(method: method, url: url, headers: headers, body: body)
            observe?(DispatchTime.now().uptimeNanoseconds - started, nil)
            return answer
        } catch {
            observe?(DispatchTime.now().uptimeNanoseconds - started, error)
            switch error {
            case .timedOut: return .text(504, "upstream did not answer within \(Int(timeout)) s")
            case .unreachable: return .text(502, "upstream unreachable")
            }
        }
    }
}
