import HTTPCapsules
import NetExtCore
import NIOHPACK

/// What one relay stream asks for, read from its request head: a TCP tunnel (CONNECT with only
/// `:authority`, RFC 9113 §8.5) or UDP proxying (extended CONNECT, RFC 8441 §4, `:protocol
/// connect-udp` and the target in `:path`, RFC 9298 §3.4) or IP proxying (`:protocol
/// connect-ip` and the scope in `:path`, RFC 9484 §4.4 and §4.6). Anything else is refused with the status
/// a client can act on.
enum RelayRequest: Equatable {
    case tcp(host: String, port: UInt16)
    case udp(ConnectUDPTarget)
    case ip(ConnectIPScope)

    /// A request the relay answers with `status` and a reason for the log.
    struct Refusal: Error, Equatable {
        var status: Int
        var reason: String
        /// What the client asked for, for debug logs only (targets stay out of the others).
        var detail: String?
        /// RFC 9209's error type for `Proxy-Status`, when one fits.
        var proxyStatus: String?
        /// Which counter it goes to.
        var counted: WritableKeyPath<RelayCounters.Values, Int> = \.malformed
    }

    init(_ headers: HPACKHeaders) throws(Refusal) {
        let method = headers.first(name: ":method")
        let protocolName = headers.first(name: ":protocol")
        guard method == "CONNECT" else {
            throw Refusal(status: 405, reason: "the relay answers CONNECT only, not \(method ?? "a request without a method")")
        }
        switch protocolName {
        case nil:
            guard let authority = headers.first(name: ":authority"), let (host, port) = Self.hostAndPort(authority) else {
                throw Refusal(status: 400, reason: "a CONNECT needs :authority as host:port (RFC 9113 §8.5)")
            }
            self = .tcp(host: host, port: port)
        case "connect-udp":
            guard headers.first(name: ":scheme") == "https", let path = headers.first(name: ":path") else {
                throw Refusal(status: 400, reason: "connect-udp needs :scheme https and :path (RFC 9298 §3.4)")
            }
            do { self = .udp(try ConnectUDPTarget(path: path)) } catch {
                throw Refusal(status: 400, reason: "the :path is not a connect-udp target (RFC 9298 §2)", detail: error.description)
            }
        case "connect-ip":
            guard headers.first(name: ":scheme") == "https", let path = headers.first(name: ":path") else {
                throw Refusal(status: 400, reason: "connect-ip needs :scheme https and :path (RFC 9484 §4.4)")
            }
            do { self = .ip(try ConnectIPScope(path: path)) } catch {
                throw Refusal(status: 400, reason: "the :path is not a connect-ip scope (RFC 9484 §3)", detail: error.description)
            }
        case let other?:
            throw Refusal(status: 501, reason: "the relay does not serve :protocol \(other)")
        }
    }

    /// `host:port` or `[v6]:port` (RFC 9110 §7.2 authority without user info).
    static func hostAndPort(_ authority: String) -> (String, UInt16)? {
        let host: Substring, portText: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]"), authority[authority.index(after: close)...].hasPrefix(":") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            portText = authority[authority.index(close, offsetBy: 2)...]
        } else {
            guard let colon = authority.lastIndex(of: ":"), !authority[..<colon].contains(":") else { return nil }
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty, let port = UInt16(portText), port != 0 else { return nil }
        return (String(host), port)
    }
}
