import Foundation

/// The client side of an HTTP/1.1 CONNECT tunnel through a proxy (RFC 9110 §9.3.6), with Basic
/// proxy authentication (RFC 7617) when the configuration has credentials.
public enum HTTPConnectHandshake {
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The longest response head read before giving up.
    public static let maximumHead = 16_384

    /// `CONNECT host:port HTTP/1.1` with its Host header (an IPv6 address in brackets).
    public static func request(host: String, port: UInt16, username: String? = nil, password: String? = nil) -> [UInt8] {
        let authority = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let username, let password {
            head += "Proxy-Authorization: Basic \(Data("\(username):\(password)".utf8).base64EncodedString())\r\n"
        }
        return Array((head + "\r\n").utf8)
    }

    /// Where the response head ends in `bytes` (the index after the blank line), if it does.
    public static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// Checks the response head: any 2xx status opens the tunnel (RFC 9110 §15.3).
    public static func checkResponse(head: [UInt8]) throws(Failure) {
        let line = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let words = line.split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0].hasPrefix("HTTP/1."), let status = Int(words[1]), (100...599).contains(status) else {
            throw Failure("the HTTP proxy did not answer with an HTTP/1.x status line (got '\(line.prefix(80))')")
        }
        guard (200...299).contains(status) else {
            let reason = words.count > 2 ? " \(words[2])" : ""
            throw Failure("the HTTP proxy refused the tunnel: \(status)\(reason)")
        }
    }
}

