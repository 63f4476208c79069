/// A DHCPv6 message as a client that only asks for information sends and reads it (RFC 8415):
/// the Information-Request (§18.2.6) that asks the network's servers for options without taking
/// an address, and their Reply. Wire format (§8): message type (1 byte), transaction ID (3
/// bytes), then options, each a 2-byte code, a 2-byte length and the value (§21.1).
public struct DHCPv6Message: Sendable, Hashable {
    public enum MessageType: UInt8, Sendable {
        case reply = 7
        case informationRequest = 11
    }

    /// RFC 8415 §21.2 (Client Identifier), §21.7 (Option Request), §21.9 (Elapsed Time); RFC 8910
    /// §2.2 (Captive-Portal).
    public static let clientIdentifierOption: UInt16 = 1
    public static let optionRequestOption: UInt16 = 6
    public static let elapsedTimeOption: UInt16 = 8
    public static let captivePortalOption: UInt16 = 103
    /// RFC 3646 §3 (DNS Recursive Name Server).
    public static let dnsServersOption: UInt16 = 23

    public var type: UInt8
    public var transactionID: UInt32
    /// Each option's value by code (the first of a code that appears twice).
    public var options: [UInt16: [UInt8]]

    /// The DNS servers of option 23 (RFC 3646 §3: 16-byte addresses, in preference order) as
    /// text; empty without the option. A length that is not a multiple of 16 is refused.
    public func dnsServers() throws(CaptivePortalError) -> [String] {
        guard let value = options[Self.dnsServersOption] else { return [] }
        guard !value.isEmpty, value.count % 16 == 0 else {
            throw CaptivePortalError("the DHCPv6 option 23 (DNS servers) is \(value.count) bytes, not a multiple of 16 (RFC 3646 §3)")
        }
        return stride(from: 0, to: value.count, by: 16).map { IPPrefix.format(Array(value[$0..<($0 + 16)])) }
    }

    /// An Information-Request asking for `requesting` (option codes), with the client's DUID-LL
    /// (§11.4: type 3, hardware type 1, the interface's Ethernet address) when it has one, and an
    /// elapsed time of 0 (§21.9: required in every client message).
    public static func informationRequest(transactionID: UInt32, hardwareAddress: [UInt8], requesting: [UInt16]) -> [UInt8] {
        var bytes: [UInt8] = [MessageType.informationRequest.rawValue, UInt8(transactionID >> 16 & 0xff), UInt8(transactionID >> 8 & 0xff), UInt8(transactionID & 0xff)]
        func append(_ code: UInt16, _ value: [UInt8]) {
            bytes += [UInt8(code >> 8), UInt8(code & 0xff), UInt8(value.count >> 8), UInt8(value.count & 0xff)] + value
        }
        if hardwareAddress.count == 6 { append(clientIdentifierOption, [0, 3, 0, 1] + hardwareAddress) }
        append(optionRequestOption, requesting.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] })
        append(elapsedTimeOption, [0, 0])
        return bytes
    }

    /// Reads a message; a cut-short header or option is refused naming its offset.
    public static func parse(_ bytes: [UInt8]) throws(CaptivePortalError) -> DHCPv6Message {
        guard bytes.count >= 4 else { throw CaptivePortalError("a DHCPv6 message of \(bytes.count) bytes is shorter than its 4-byte header (RFC 8415 §8)") }
        let transactionID = UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
        var options: [UInt16: [UInt8]] = [:]
        var offset = 4
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { throw CaptivePortalError("the DHCPv6 option header at offset \(offset) is cut short") }
            let code = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard offset + 4 + length <= bytes.count else {
                throw CaptivePortalError("the DHCPv6 option \(code) at offset \(offset) runs past the end (\(length) bytes)")
            }
            if options[code] == nil { options[code] = Array(bytes[(offset + 4)..<(offset + 4 + length)]) }
            offset += 4 + length
        }
        return DHCPv6Message(type: bytes[0], transactionID: transactionID, options: options)
    }
}

extension CaptivePortalAnnouncement {
    /// The announcement in a DHCPv6 Reply (option 103, RFC 8910 §2.2), or nil when it has none.
    public static func from(_ message: DHCPv6Message) throws(CaptivePortalError) -> CaptivePortalAnnouncement? {
        guard let value = message.options[DHCPv6Message.captivePortalOption] else { return nil }
        return try parse(uri: value, source: "DHCPv6 option 103 (captive portal)")
    }
}
