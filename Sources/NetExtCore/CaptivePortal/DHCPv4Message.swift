/// The parts of a DHCPv4 message (RFC 2131 §2) that captive portal discovery needs: the
/// operation, the transaction, and the options — with option overload (RFC 2131 §4.1, option 52:
/// options continued in the `file` then `sname` fields) and long options split into several
/// (RFC 3396 §7: concatenated in the order options, file, sname).
public struct DHCPv4Message: Sendable, Hashable {
    /// 1 BOOTREQUEST, 2 BOOTREPLY.
    public var operation: UInt8
    public var transactionID: UInt32
    /// The options by code, each long option's parts joined.
    public var options: [UInt8: [UInt8]]

    /// Where the fixed part ends and the options' magic cookie begins (RFC 2131 §3).
    static let fixedLength = 236
    static let magicCookie: [UInt8] = [99, 130, 83, 99]
    static let sname = 44..<108
    static let file = 108..<236

    /// DHCP message types (option 53, RFC 2132 §9.6).
    public enum MessageType: UInt8, Sendable {
        case discover = 1, offer, request, decline, ack, nak, release, inform
    }

    public init(operation: UInt8, transactionID: UInt32, options: [UInt8: [UInt8]]) {
        self.operation = operation
        self.transactionID = transactionID
        self.options = options
    }

    /// The network's DNS servers (option 6, RFC 2132 §3.8: one or more IPv4 addresses), dotted,
    /// in the server's order of preference; none when the option is absent. A length that is no
    /// multiple of 4 is refused.
    public func domainNameServers() throws(CaptivePortalError) -> [String] {
        guard let value = options[6] else { return [] }
        guard !value.isEmpty, value.count % 4 == 0 else {
            throw CaptivePortalError("the DHCP message's option 6 (DNS servers) is \(value.count) bytes, not a multiple of 4 (RFC 2132 §3.8)")
        }
        return stride(from: 0, to: value.count, by: 4).map { value[$0..<($0 + 4)].map(String.init).joined(separator: ".") }
    }

    /// The message type (option 53), if present and known.
    public var messageType: MessageType? { options[53].flatMap { $0.count == 1 ? MessageType(rawValue: $0[0]) : nil } }

    /// Parses a message as received; refuses one that is short, lacks the magic cookie, or has an
    /// option that runs past its field, naming the offset.
    public static func parse(_ bytes: [UInt8]) throws(CaptivePortalError) -> DHCPv4Message {
        guard bytes.count >= fixedLength + magicCookie.count else {
            throw CaptivePortalError("the DHCP message is \(bytes.count) bytes; at least \(fixedLength + magicCookie.count) are needed (RFC 2131 §2)")
        }
        guard Array(bytes[fixedLength..<fixedLength + 4]) == magicCookie else {
            throw CaptivePortalError("the DHCP message has no magic cookie at offset \(fixedLength) (RFC 2131 §3)")
        }
        let transactionID = bytes[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var options: [UInt8: [UInt8]] = [:]
        try collectOptions(bytes, in: (fixedLength + 4)..<bytes.count, into: &options)
        if let overload = options[52] {
            guard overload.count == 1, (1...3).contains(overload[0]) else {
                throw CaptivePortalError("the DHCP message's option 52 (overload) must be one byte of 1, 2 or 3 (RFC 2132 §9.3)")
            }
            if overload[0] & 1 != 0 { try collectOptions(bytes, in: file, into: &options) }
            if overload[0] & 2 != 0 { try collectOptions(bytes, in: sname, into: &options) }
        }
        return DHCPv4Message(operation: bytes[0], transactionID: transactionID, options: options)
    }

    private static func collectOptions(_ bytes: [UInt8], in range: Range<Int>, into options: inout [UInt8: [UInt8]]) throws(CaptivePortalError) {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let code = bytes[offset]
            if code == 0 {  // pad
                offset += 1
                continue
            }
            if code == 255 { return }  // end
            guard offset + 1 < range.upperBound else {
                throw CaptivePortalError("the DHCP message's option \(code) at offset \(offset) has no length byte")
            }
            let length = Int(bytes[offset + 1])
            guard offset + 2 + length <= range.upperBound else {
                throw CaptivePortalError("the DHCP message's option \(code) at offset \(offset) runs past the end of its field (\(length) bytes)")
            }
            options[code, default: []].append(contentsOf: bytes[(offset + 2)..<(offset + 2 + length)])
            offset += 2 + length
        }
    }

    /// A DHCPINFORM (RFC 2131 §3.4, §4.4.3): a client that already has `clientAddress` asks the
    /// server for configuration only, here the options in `requesting` (option 55). Broadcast
    /// flag clear: the server answers to `clientAddress`.
    public static func inform(transactionID: UInt32, clientAddress: [UInt8], hardwareAddress: [UInt8], requesting: [UInt8]) -> [UInt8] {
        var message = [UInt8](repeating: 0, count: fixedLength)
        message[0] = 1  // BOOTREQUEST
        message[1] = 1  // Ethernet
        message[2] = UInt8(min(hardwareAddress.count, 16))
        for index in 0..<4 { message[4 + index] = UInt8(truncatingIfNeeded: transactionID >> (24 - 8 * UInt32(index))) }
        for (index, byte) in clientAddress.prefix(4).enumerated() { message[12 + index] = byte }  // ciaddr
        for (index, byte) in hardwareAddress.prefix(16).enumerated() { message[28 + index] = byte }  // chaddr
        message += magicCookie
        message += [53, 1, MessageType.inform.rawValue]
        message += [55, UInt8(min(requesting.count, 255))] + requesting.prefix(255)
        message.append(255)
        return message
    }
}
