import Foundation
import NetExtCore
import NetExtLinux

/// For EvaluateConnection's `useDNSServers`: whether a name resolves through given servers
/// (an A query, RFC 1035 §4.1; answered with NOERROR and at least one answer record).
enum DNSReachability {
    static func resolves(_ name: String, via servers: [String], timeoutMilliseconds: Int = 1500) -> Bool {
        let id = UInt16.random(in: 1...UInt16.max)
        var query: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") where !label.isEmpty && label.utf8.count < 64 {
            query.append(UInt8(label.utf8.count))
            query += Array(label.utf8)
        }
        query += [0, 0, 1, 0, 1]
        for server in servers {
            guard let bytes = IPPrefix.parseAddress(server),
                  let socket = try? UDPSocket(bindingTo: SocketAddress(address: [UInt8](repeating: 0, count: bytes.count), port: 0), receiveBuffer: 1 << 16, sendBuffer: 1 << 16) else { continue }
            defer { socket.close() }
            guard (try? socket.connect(to: SocketAddress(address: bytes, port: 53))) != nil,
                  (try? query.withUnsafeBytes({ try socket.send($0) })) != nil else { continue }
            socket.setReceiveTimeout(milliseconds: timeoutMilliseconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }), received.count >= 12,
                  buffer[0] == query[0], buffer[1] == query[1] else { continue }
            let rcode = buffer[3] & 0x0f
            let answers = Int(buffer[6]) << 8 | Int(buffer[7])
            return rcode == 0 && answers > 0
        }
        return false
    }
}
