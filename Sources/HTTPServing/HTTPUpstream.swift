import Dispatch
import Foundation

/// Sends requests to another server — the relay to its gateway, the gateway to its targets, an
/// origin to its issuer's directory, a client to the relay: HTTP and HTTPS over pooled keep-alive
/// connections (`PooledHTTPClient`). Only the headers the caller names are sent; no cookies, no
/// cache, no credentials of its own.
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

    let pool: PooledHTTPClient
    let timeout: Double

    /// `tls`: whom HTTPS upstreams must prove themselves to (default: the system trust store).
    public init(timeout: Double = 30, tls: ClientTLS? = nil) {
        pool = PooledHTTPClient(timeout: timeout, tls: tls)
        self.timeout = timeout
    }

    /// Sends one request and returns the answer, whatever its status; `headers` are the only
    /// header fields added by the caller. `http` and `https` URLs only.
    public func exchange(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async throws(Failure) -> HTTPServerResponse {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw .unreachable("\(url.absoluteString) is not an http or https URL")
        }
        let secure = scheme == "https"
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        // URL keeps an IPv6 literal's brackets in `host`; sockets want the bare address.
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        do throws(PooledHTTPClient.Failure) {
            let answer = try await pool.send(
                method: method, secure: secure, host: bare, port: url.port ?? (secure ? 443 : 80), target: target, headers: headers, body: body)
            return HTTPServerResponse(status: answer.status, headers: answer.headers, body: answer.body)
        } catch {
            switch error {
            case .timedOut: throw .timedOut(seconds: Int(timeout))
            case let .tls(reason): throw .unreachable("\(host): TLS: \(reason)")
            case .connect: throw .unreachable("\(error)")
            default: throw .unreachable("\(host): \(error)")
            }
        }
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
