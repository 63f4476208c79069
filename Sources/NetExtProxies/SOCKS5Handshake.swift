import NetExtCore

/// The client side of a SOCKS version 5 handshake (RFC 1928, with RFC 1929 user name and
/// password authentication) as bytes, without I/O: what to send, and how to read each answer.
public enum SOCKS5Handshake {
    /// A server's answer that ends the handshake, as a sentence.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    static let version: UInt8 = 5
    static let noAuthentication: UInt8 = 0x00
    static let userPassword: UInt8 = 0x02
    static let noAcceptableMethod: UInt8 = 0xFF

    /// The method-selection message (RFC 1928 §3): no authentication, and user name/password
    /// when there are credentials.
    public static func greeting(offeringPassword: Bool) -> [UInt8] {
        offeringPassword ? [version, 2, noAuthentication, userPassword] : [version, 1, noAuthentication]
    }

    /// The server's method choice (2 bytes): whether it wants the user name and password.
    public static func passwordRequired(byMethodSelection reply: [UInt8], offeredPassword: Bool) throws(Failure) -> Bool {
        guard reply.count == 2, reply[0] == version else { throw Failure("the SOCKS server did not answer as SOCKS 5 (got \(hex(reply)))") }
        switch reply[1] {
        case noAuthentication: return false
        case userPassword where offeredPassword: return true
        case userPassword: throw Failure("the SOCKS server requires a user name and password, and the configuration has none")
        case noAcceptableMethod: throw Failure("the SOCKS server accepts none of the offered authentication methods")
        default: throw Failure("the SOCKS server chose authentication method \(reply[1]), which was not offered")
        }
    }

    /// The user name/password request (RFC 1929 §2); each at most 255 bytes.
    public static func passwordRequest(username: String, password: String) throws(Failure) -> [UInt8] {
        let user = Array(username.utf8), secret = Array(password.utf8)
        guard (1...255).contains(user.count), (1...255).contains(secret.count) else {
            throw Failure("SOCKS user names and passwords are 1 to 255 bytes (RFC 1929)")
        }
        return [1, UInt8(user.count)] + user + [UInt8(secret.count)] + secret
    }

    /// The answer to the user name/password request (2 bytes; status 0 is success).
    public static func checkPasswordReply(_ reply: [UInt8]) throws(Failure) {
        guard reply.count == 2, reply[0] == 1 else { throw Failure("malformed SOCKS authentication answer (got \(hex(reply)))") }
        guard reply[1] == 0 else { throw Failure("the SOCKS server refused the user name and password") }
    }

    /// The CONNECT request (RFC 1928 §4) for `host` — an IPv4 or IPv6 address, or a name the
    /// server resolves (at most 255 bytes) — and `port`.
    public static func connectRequest(host: String, port: UInt16) throws(Failure) -> [UInt8] {
        var bytes: [UInt8] = [version, 1, 0]
        if let address = IPPrefix.parseAddress(host) {
            bytes.append(address.count == 4 ? 1 : 4)
            bytes += address
        } else {
            let name = Array(host.utf8)
            guard (1...255).contains(name.count) else { throw Failure("host name '\(host)' is too long for SOCKS (255 bytes at most)") }
            bytes.append(3)
            bytes.append(UInt8(name.count))
            bytes += name
        }
        return bytes + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    /// Reads the first 5 bytes of the CONNECT reply (RFC 1928 §6): throws the server's refusal,
    /// or returns how many more bytes the reply has (the rest of the bound address and port).
    public static func remainingReplyLength(afterFirst5 reply: [UInt8]) throws(Failure) -> Int {
        guard reply.count == 5, reply[0] == version, reply[2] == 0 else { throw Failure("malformed SOCKS reply (got \(hex(reply)))") }
        guard reply[1] == 0 else { throw Failure("the SOCKS server refused the connection: \(replyText(reply[1]))") }
        switch reply[3] {
        case 1: return 4 - 1 + 2
        case 4: return 16 - 1 + 2
        case 3: return Int(reply[4]) + 2
        default: throw Failure("malformed SOCKS reply: address type \(reply[3])")
        }
    }

    /// The reply field's meaning (RFC 1928 §6).
    public static func replyText(_ code: UInt8) -> String {
        switch code {
        case 1: "general SOCKS server failure"
        case 2: "connection not allowed by ruleset"
        case 3: "network unreachable"
        case 4: "host unreachable"
        case 5: "connection refused"
        case 6: "TTL expired"
        case 7: "command not supported"
        case 8: "address type not supported"
        default: "reply code \(code)"
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.isEmpty ? "nothing" : bytes.prefix(16).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined(separator: " ")
    }
}
