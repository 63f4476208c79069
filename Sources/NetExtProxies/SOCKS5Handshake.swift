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

    /// The UDP ASSOCIATE request (RFC 1928 §4, command 3) with an unspecified client address
    /// (0.0.0.0:0: the client sends from wherever its UDP socket is).
    public static let udpAssociateRequest: [UInt8] = [version, 3, 0, 1, 0, 0, 0, 0, 0, 0]

    /// The bound address and port of a reply (`rest`, the bytes after the first 5, whose fifth
    /// byte began the address): where the server relays UDP. A name (address type 3) is returned
    /// as text.
    public static func boundEndpoint(first5: [UInt8], rest: [UInt8]) throws(Failure) -> (host: String, port: UInt16) {
        let whole = first5 + rest
        guard whole.count >= 4 + 2 else { throw Failure("malformed SOCKS reply (got \(hex(whole)))") }
        let port = UInt16(whole[whole.count - 2]) << 8 | UInt16(whole[whole.count - 1])
        let address = Array(whole[4..<(whole.count - 2)])
        switch whole[3] {
        case 1 where address.count == 4, 4 where address.count == 16: return (IPPrefix.format(address), port)
        case 3 where !address.isEmpty && Int(address[0]) == address.count - 1:
            return (String(decoding: address.dropFirst(), as: UTF8.self), port)
        default: throw Failure("malformed SOCKS reply: bound address of type \(whole[3]) and \(address.count) bytes")
        }
    }

    /// A datagram to send through the UDP relay (RFC 1928 §7): the header naming its
    /// destination (an address, or a name the server resolves), then the data. Nil if the name
    /// is too long.
    public static func udpDatagram(to host: String, port: UInt16, data: some Collection<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = [0, 0, 0]
        if let address = IPPrefix.parseAddress(host) {
            bytes.append(address.count == 4 ? 1 : 4)
            bytes += address
        } else {
            let name = Array(host.utf8)
            guard (1...255).contains(name.count) else { return nil }
            bytes += [3, UInt8(name.count)] + name
        }
        return bytes + [UInt8(port >> 8), UInt8(port & 0xFF)] + data
    }

    /// Where a datagram from the UDP relay (RFC 1928 §7) starts its data; nil for a malformed
    /// or fragmented one (fragments are not reassembled: RFC 1928 lets a client drop them).
    public static func udpPayloadOffset(_ datagram: some RandomAccessCollection<UInt8>) -> Int? {
        let bytes = Array(datagram.prefix(262))
        guard bytes.count >= 4, bytes[0] == 0, bytes[1] == 0, bytes[2] == 0 else { return nil }
        let header: Int
        switch bytes[3] {
        case 1: header = 4 + 4 + 2
        case 4: header = 4 + 16 + 2
        case 3:
            guard bytes.count >= 5 else { return nil }
            header = 4 + 1 + Int(bytes[4]) + 2
        default: return nil
        }
        return datagram.count >= header ? header : nil
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
