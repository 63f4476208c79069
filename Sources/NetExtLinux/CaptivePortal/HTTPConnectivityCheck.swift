import Foundation
import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// A connectivity check's fetch: one plain-HTTP/1.1 GET on a TCP connection, bound to one interface
/// when one is named (`SO_BINDTODEVICE`, as Apple's hotspot helper's connections are bound to their
/// network; on-demand's probe names none), the
/// answer read until the server closes (`Connection: close`) or `ProbeResponse.maximumSize`.
/// `mark`: the socket's mark (`SO_MARK`), by which a traffic guard lets it pass.
public enum HTTPConnectivityCheck {
    public static func fetch(_ url: URL, interface: String?, mark: UInt32? = nil, timeoutMilliseconds: Int = 3000) throws(SystemError) -> [UInt8] {
        guard url.scheme?.lowercased() == "http", let host = url.host else {
            throw SystemError("connectivity check", errno: EINVAL, subject: "\(url.absoluteString) is not a plain http URL")
        }
        let port = UInt16(url.port ?? 80)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else {
            throw SystemError("getaddrinfo", errno: ENOENT, subject: host)
        }
        defer { freeaddrinfo(first) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: host) }
        defer { close(fd) }
        if let interface {
            try InterfaceSocket.bind(fd, to: interface)
        }
        // Without CAP_NET_ADMIN no mark is set, and a traffic guard holds the check like the rest.
        if let mark { _ = setSocketMark(fd, mark) }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw SystemError("connect", errno: errno, subject: "\(host):\(port)\(interface.map { " on \($0)" } ?? "")")
        }
        let path = url.path.isEmpty ? "/" : url.path + (url.query.map { "?" + $0 } ?? "")
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: netextd-connectivity-check\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw SystemError("send", errno: errno, subject: "\(host):\(port)")
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while response.count < ProbeResponse.maximumSize {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else {
                if response.isEmpty { throw SystemError("recv", errno: errno, subject: "\(host):\(port)") }
                break
            }
            response += buffer[..<min(count, ProbeResponse.maximumSize - response.count)]
        }
        return response
    }
}
