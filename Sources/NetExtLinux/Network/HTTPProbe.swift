import CNetExtLinux
import Foundation
import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// The on-demand probe: an HTTP/1.1 GET (RFC 9112) whose answer matches only if its status is
/// 200 — a redirect (a captive portal) does not. Plain `http` only; an `https` probe URL never
/// matches (logged), since netextd carries no TLS stack.
public enum HTTPProbe {
    public static func succeeds(_ url: URL, timeoutMilliseconds: Int = 2000) -> Bool {
        guard url.scheme == "http", let host = url.host else { return false }
        let port = UInt16(url.port ?? 80)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return false }
        defer { freeaddrinfo(first) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return false }
        let path = url.path.isEmpty ? "/" : url.path + (url.query.map { "?" + $0 } ?? "")
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: netextd-probe\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return false }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while response.count < 512, !response.contains(UInt8(ascii: "\n")) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            response += buffer[..<count]
        }
        return statusCode(of: response) == 200
    }

    /// The status code of an HTTP/1.x status line ("HTTP/1.1 200 OK").
    static func statusCode(of response: [UInt8]) -> Int? {
        let line = String(decoding: response.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") else { return nil }
        return Int(parts[1])
    }
}
