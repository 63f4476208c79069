import Foundation
import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// A connectivity check's fetch: one plain-HTTP/1.1 GET on a TCP connection, bound to one interface
/// when one is named (`SO_BINDTODEVICE`, as Apple's hotspot helper's connections are bound to their
/// network; on-demand's probe names none), the
/// answer read until the server closes (`Connection: close`) or `ProbeResponse.maximumSize`.
/// `mark`: the socket's mark (`SO_MARK`), by which a traffic guard lets it pass. `address`: the
/// numeric address to connect to, when the caller looked the URL's host up itself (netextd's
/// detection asks the network's own DNS server); else the system's resolver is asked.
public enum HTTPConnectivityCheck {
    public static func fetch(_ url: URL, address: String? = nil, interface: String?, mark: UInt32? = nil, timeoutMilliseconds: Int = 3000) throws(SystemError) -> [UInt8] {
        guard url.scheme?.lowercased() == "http", let host = url.host else {
            throw SystemError("connectivity check", errno: EINVAL, subject: "\(url.absoluteString) is not a plain http URL")
        }
        let port = UInt16(url.port ?? 80)
        let fd = try InterfaceSocket.connectTCP(host: host, address: address, port: port, interface: interface, mark: mark, timeoutMilliseconds: timeoutMilliseconds)
        defer { close(fd) }
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
            // A signal interrupts a receive with a timeout even under SA_RESTART (signal(7)).
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                if response.isEmpty { throw SystemError("recv", errno: errno, subject: "\(host):\(port)") }
                break
            }
            response += buffer[..<min(count, ProbeResponse.maximumSize - response.count)]
        }
        return response
    }
}
