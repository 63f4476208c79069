import NetExtCore

/// What a DNS response says about its question's name: the IPv4 and IPv6 addresses it resolves
/// to, following CNAME records within the answer (RFC 1035 §4.1 message, §3.2.2 types: A is 1,
/// CNAME 5; AAAA is 28, RFC 3596 §2.1), each with its time to live. The content filter maps
/// these addresses back to the name a program asked for.
public struct DNSAnswerAddresses: Sendable, Hashable {
    public struct Address: Sendable, Hashable {
        public var bytes: [UInt8]
        public var ttl: UInt32
    }

    /// The question's name, lowercased, without the trailing dot.
    public var name: String
    public var addresses: [Address]

    /// Parses a response (QR set, RCODE 0); refuses queries, errors and malformed messages with
    /// the offset at fault. Records of other classes or types are skipped.
    public init(parsing message: [UInt8]) throws(DNSParseError) {
        guard message.count >= 12 else { throw .malformed(offset: message.count, "shorter than the 12-byte header") }
        guard message[2] & 0x80 != 0 else { throw .malformed(offset: 2, "a query, not a response") }
        guard message[3] & 0x0f == 0 else { throw .malformed(offset: 3, "response code \(message[3] & 0x0f)") }
        let questions = Int(message[4]) << 8 | Int(message[5])
        let answers = Int(message[6]) << 8 | Int(message[7])
        guard questions >= 1 else { throw .malformed(offset: 4, "no question") }
        var offset = 12
        name = try DNSQuery.readName(message, at: &offset)
        offset += 4
        for _ in 1..<questions {
            _ = try DNSQuery.skipName(message, at: &offset)
            offset += 4
        }
        guard offset <= message.count else { throw .malformed(offset: message.count, "the question section runs past the end") }
        var aliases: [String: String] = [:]  // owner → canonical name
        var found: [(owner: String, address: Address)] = []
        for _ in 0..<answers {
            let owner = try DNSQuery.readName(message, at: &offset)
            guard offset + 10 <= message.count else { throw .malformed(offset: offset, "a record's fixed fields run past the end") }
            let type = Int(message[offset]) << 8 | Int(message[offset + 1])
            let recordClass = Int(message[offset + 2]) << 8 | Int(message[offset + 3])
            let ttl = UInt32(message[offset + 4]) << 24 | UInt32(message[offset + 5]) << 16 | UInt32(message[offset + 6]) << 8 | UInt32(message[offset + 7])
            let length = Int(message[offset + 8]) << 8 | Int(message[offset + 9])
            let dataStart = offset + 10
            guard dataStart + length <= message.count else { throw .malformed(offset: offset + 8, "record data of \(length) bytes runs past the end") }
            offset = dataStart + length
            guard recordClass == 1 else { continue }
            switch (type, length) {
            case (1, 4), (28, 16):
                found.append((owner, Address(bytes: Array(message[dataStart..<(dataStart + length)]), ttl: ttl)))
            case (1, _), (28, _):
                throw .malformed(offset: dataStart - 2, "an address record of \(length) bytes")
            case (5, _):
                var target = dataStart
                aliases[owner] = try DNSQuery.readName(message, at: &target)
            default:
                continue
            }
        }
        // The names the question leads to through CNAMEs (a chain of at most 16).
        var chain: Set<String> = [name]
        var current = name
        for _ in 0..<16 {
            guard let next = aliases[current], chain.insert(next).inserted else { break }
            current = next
        }
        addresses = found.filter { chain.contains($0.owner) }.map(\.address)
    }
}
