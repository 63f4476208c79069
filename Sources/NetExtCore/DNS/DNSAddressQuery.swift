/// A query for a name's addresses, as a stub resolver sends it (RFC 1035 §4.1.1 header with RD
/// set and one question, §4.1.2 question, §3.1 names as labels of at most 63 bytes and 255 in
/// all), and the reading of its answer: the answer must be to this query (identifier, name,
/// type and class: `DNSMessageEditing.mismatch`), and its addresses are those the question's name
/// leads to through CNAMEs (`DNSAnswerAddresses`' rules, here for one type).
public struct DNSAddressQuery: Sendable, Hashable {
    /// A (RFC 1035 §3.2.2) or AAAA (RFC 3596 §2.1).
    public enum RecordType: UInt16, Sendable {
        case a = 1, aaaa = 28

        var addressLength: Int { self == .a ? 4 : 16 }
    }

    public let id: UInt16
    /// The name asked, lowercased, without a trailing dot.
    public let name: String
    public let type: RecordType
    /// The query's bytes.
    public let message: [UInt8]

    /// Builds the query for `name` (a trailing dot allowed); refuses an empty name, an empty or
    /// long label, or a long name, naming it.
    public init(name: String, type: RecordType = .a, id: UInt16) throws(DNSParseError) {
        let trimmed = name.hasSuffix(".") ? String(name.dropLast()) : name
        guard !trimmed.isEmpty else { throw .malformed(offset: 0, "an empty name cannot be looked up") }
        var question: [UInt8] = []
        for label in trimmed.split(separator: ".", omittingEmptySubsequences: false) {
            let bytes = Array(label.utf8)
            guard !bytes.isEmpty, bytes.count <= 63 else {
                throw .malformed(offset: question.count, "\"\(trimmed)\" has a label of \(bytes.count) bytes (1 to 63, RFC 1035 §2.3.4)")
            }
            question.append(UInt8(bytes.count))
            question += bytes
        }
        question.append(0)
        guard question.count <= 255 else { throw .malformed(offset: 255, "\"\(trimmed)\" is longer than 255 bytes (RFC 1035 §2.3.4)") }
        self.id = id
        self.name = trimmed.lowercased()
        self.type = type
        // ID, flags (RD), QDCOUNT 1, ANCOUNT, NSCOUNT, ARCOUNT 0; the question; QTYPE; QCLASS IN.
        message = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0] + question
            + [UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xff), 0, 1]
    }

    /// The addresses `answer` gives for this query, in its order (empty: the name exists but has
    /// none of this type). Throws when it answers another query, reports an error (a name that
    /// does not exist: response code 3), or is malformed, naming the offset at fault.
    public func addresses(in answer: [UInt8]) throws(DNSParseError) -> [[UInt8]] {
        if let mismatch = DNSMessageEditing.mismatch(of: answer, to: message) { throw .malformed(offset: 0, mismatch) }
        guard answer.count >= 12 else { throw .malformed(offset: answer.count, "shorter than the 12-byte header") }
        let code = answer[3] & 0x0f
        guard code == 0 else {
            throw .malformed(offset: 3, code == 3 ? "\(name) does not exist (NXDOMAIN)" : "the server answered response code \(code)")
        }
        guard answer[2] & 0x02 == 0 else { throw .malformed(offset: 2, "the answer is truncated (TC): it did not fit a datagram") }
        let questions = Int(answer[4]) << 8 | Int(answer[5])
        let answers = Int(answer[6]) << 8 | Int(answer[7])
        var offset = 12
        for _ in 0..<questions {
            _ = try DNSQuery.skipName(answer, at: &offset)
            offset += 4
        }
        guard offset <= answer.count else { throw .malformed(offset: answer.count, "the question section runs past the end") }
        var aliases: [String: String] = [:]
        var found: [(owner: String, address: [UInt8])] = []
        for _ in 0..<answers {
            let owner = try DNSQuery.readName(answer, at: &offset)
            guard offset + 10 <= answer.count else { throw .malformed(offset: offset, "a record's fixed fields run past the end") }
            let recordType = UInt16(answer[offset]) << 8 | UInt16(answer[offset + 1])
            let recordClass = UInt16(answer[offset + 2]) << 8 | UInt16(answer[offset + 3])
            let length = Int(answer[offset + 8]) << 8 | Int(answer[offset + 9])
            let start = offset + 10
            guard start + length <= answer.count else { throw .malformed(offset: offset + 8, "record data of \(length) bytes runs past the end") }
            offset = start + length
            guard recordClass == 1 else { continue }
            if recordType == type.rawValue {
                guard length == type.addressLength else { throw .malformed(offset: start - 2, "an address record of \(length) bytes") }
                found.append((owner, Array(answer[start..<offset])))
            } else if recordType == 5 {
                var target = start
                aliases[owner] = try DNSQuery.readName(answer, at: &target)
            }
        }
        var chain: Set<String> = [name]
        var current = name
        for _ in 0..<16 {
            guard let next = aliases[current], chain.insert(next).inserted else { break }
            current = next
        }
        return found.filter { chain.contains($0.owner) }.map(\.address)
    }
}
