/// What netextd's resolver changes in a query before sending it over an encrypted transport, and
/// how it checks the answer: the identifier (RFC 1035 §4.1.1), EDNS(0) padding (RFC 7830 option
/// 12, to RFC 8467 §4.1's 128-byte blocks, so that the length of an encrypted query says little
/// about the name), and that an answer is a response to the question asked.
public enum DNSMessageEditing {
    /// RFC 8467 §4.1: "Clients SHOULD pad queries to the closest multiple of 128 octets."
    public static let queryPaddingBlock = 128
    /// The EDNS(0) option code of padding (RFC 7830 §3).
    static let paddingOptionCode: UInt16 = 12
    /// The resource record type of the EDNS(0) pseudo-record (RFC 6891 §6.1.1).
    static let optType: UInt16 = 41
    /// The UDP payload size an added OPT record advertises (RFC 6891 §6.2.5; the DNS flag day
    /// 2020 value). Over TLS or HTTPS it bounds nothing, but the field must hold something.
    static let advertisedPayloadSize: UInt16 = 1232

    /// `message` with its identifier replaced.
    public static func replacingID(of message: [UInt8], with id: UInt16) -> [UInt8] {
        var copy = message
        if copy.count >= 2 {
            copy[0] = UInt8(id >> 8)
            copy[1] = UInt8(id & 0xff)
        }
        return copy
    }

    /// The identifier of `message` (the first two bytes), nil when it is shorter than that.
    public static func id(of message: [UInt8]) -> UInt16? {
        message.count >= 2 ? UInt16(message[0]) << 8 | UInt16(message[1]) : nil
    }

    /// `query` padded to a multiple of `block` bytes with an EDNS(0) padding option: added to
    /// its OPT record, or in an OPT record appended to it. A query that already carries a padding
    /// option is returned unchanged (its sender chose). Refuses a message whose sections do not
    /// parse, naming the offset.
    public static func padded(_ query: [UInt8], toMultipleOf block: Int = queryPaddingBlock) throws(DNSParseError) -> [UInt8] {
        let layout = try DNSSectionLayout(parsing: query)
        var message = query
        if let opt = layout.opt {
            if try optionsContainPadding(query, rdata: opt.rdataStart..<opt.rdataEnd) { return query }
            let pad = paddingLength(current: message.count + 4, block: block)
            let option = paddingOption(length: pad)
            message.insert(contentsOf: option, at: opt.rdataEnd)
            let newLength = (opt.rdataEnd - opt.rdataStart) + option.count
            guard newLength <= 0xffff else { throw .malformed(offset: opt.rdataStart - 2, "the OPT record cannot grow past 65535 bytes") }
            message[opt.rdataStart - 2] = UInt8(newLength >> 8)
            message[opt.rdataStart - 1] = UInt8(newLength & 0xff)
            return message
        }
        guard layout.additionalCount < 0xffff else { throw .malformed(offset: 10, "the additional section is full") }
        // Root name, TYPE OPT, CLASS = payload size, TTL = extended RCODE, version, flags (0).
        let header: [UInt8] = [0, UInt8(optType >> 8), UInt8(optType & 0xff), UInt8(advertisedPayloadSize >> 8), UInt8(advertisedPayloadSize & 0xff), 0, 0, 0, 0]
        let pad = paddingLength(current: message.count + header.count + 2 + 4, block: block)
        let option = paddingOption(length: pad)
        message += header
        message += [UInt8(option.count >> 8), UInt8(option.count & 0xff)]
        message += option
        let count = layout.additionalCount + 1
        message[10] = UInt8(count >> 8)
        message[11] = UInt8(count & 0xff)
        return message
    }

    /// Why `answer` is not the response to `query`, or nil when it is: a response (QR set) with
    /// the query's identifier and its first question (name compared without case, type, class).
    public static func mismatch(of answer: [UInt8], to query: [UInt8]) -> String? {
        guard answer.count >= 12 else { return "the answer is shorter than a DNS header (\(answer.count) bytes)" }
        guard answer[2] & 0x80 != 0 else { return "the answer is a query, not a response" }
        guard answer[0] == query[0], answer[1] == query[1] else { return "the answer's identifier is not the query's" }
        let questions = UInt16(answer[4]) << 8 | UInt16(answer[5])
        guard questions >= 1 else {
            // RFC 1035 allows an answer without the question only for errors (FORMERR, NOTIMP).
            return answer[3] & 0x0f == 0 ? "the answer carries no question" : nil
        }
        do {
            var asked = 12
            let askedName = try DNSQuery.readName(query, at: &asked)
            var answered = 12
            let answeredName = try DNSQuery.readName(answer, at: &answered)
            guard askedName == answeredName else { return "the answer is for '\(answeredName)', not '\(askedName)'" }
            guard asked + 4 <= query.count, answered + 4 <= answer.count,
                  query[asked..<(asked + 4)].elementsEqual(answer[answered..<(answered + 4)]) else {
                return "the answer's question type or class is not the query's"
            }
            return nil
        } catch {
            return "the answer's question does not parse (\(error))"
        }
    }

    /// `answer` made fit for the client that sent `query`: without the OPT record if the query
    /// had none (netextd added it for padding; RFC 6891 §7: no OPT in an answer to a query
    /// without one), and over UDP no longer than the client takes (512 bytes, or its OPT's
    /// payload size): a longer one becomes the header and question with TC set (RFC 1035
    /// §4.1.1; RFC 7766 §5: the client asks again over TCP). An answer that does not parse is
    /// returned unchanged (the upstream's own, checked against the question already).
    public static func fitted(_ answer: [UInt8], forQuery query: [UInt8], overUDP: Bool) -> [UInt8] {
        guard let asked = try? DNSSectionLayout(parsing: query) else { return answer }
        var fitted = answer
        if asked.opt == nil, let layout = try? DNSSectionLayout(parsing: answer), let opt = layout.opt {
            fitted.removeSubrange(opt.start..<opt.rdataEnd)
            let count = layout.additionalCount - 1
            fitted[10] = UInt8(count >> 8)
            fitted[11] = UInt8(count & 0xff)
        }
        let limit = max(512, asked.opt?.payloadSize ?? 512)
        guard overUDP, fitted.count > limit else { return fitted }
        var questionEnd = 12
        let questions = Int(fitted[4]) << 8 | Int(fitted[5])
        for _ in 0..<questions {
            guard (try? DNSQuery.readName(fitted, at: &questionEnd)) != nil, questionEnd + 4 <= fitted.count else { return Array(fitted[..<12]) }
            questionEnd += 4
        }
        var truncated = Array(fitted[..<questionEnd])
        truncated[2] |= 0x02  // TC
        for index in 6..<12 { truncated[index] = 0 }
        return truncated
    }

    private static func paddingLength(current: Int, block: Int) -> Int {
        let remainder = current % block
        return remainder == 0 ? 0 : block - remainder
    }

    private static func paddingOption(length: Int) -> [UInt8] {
        [UInt8(paddingOptionCode >> 8), UInt8(paddingOptionCode & 0xff), UInt8(length >> 8), UInt8(length & 0xff)]
            + [UInt8](repeating: 0, count: length)
    }

    private static func optionsContainPadding(_ message: [UInt8], rdata: Range<Int>) throws(DNSParseError) -> Bool {
        var offset = rdata.lowerBound
        while offset < rdata.upperBound {
            guard offset + 4 <= rdata.upperBound else { throw .malformed(offset: offset, "an EDNS option header is cut off") }
            let code = UInt16(message[offset]) << 8 | UInt16(message[offset + 1])
            let length = Int(message[offset + 2]) << 8 | Int(message[offset + 3])
            guard offset + 4 + length <= rdata.upperBound else { throw .malformed(offset: offset, "an EDNS option runs past its record") }
            if code == paddingOptionCode { return true }
            offset += 4 + length
        }
        return false
    }
}

/// Where a DNS message's sections lie (RFC 1035 §4.1): walked record by record, names
/// (compressed or not) skipped, the EDNS(0) OPT record found.
struct DNSSectionLayout {
    struct OPTRecord {
        /// Where the record begins (its root name).
        var start: Int
        var rdataStart: Int
        var rdataEnd: Int
        /// The CLASS field: the largest UDP answer the sender takes (RFC 6891 §6.1.2).
        var payloadSize: Int
    }

    var additionalCount: Int
    var opt: OPTRecord?
    /// Where the last record ends (bytes after it are refused).
    var end: Int

    init(parsing message: [UInt8]) throws(DNSParseError) {
        guard message.count >= 12 else { throw .malformed(offset: message.count, "shorter than the 12-byte header") }
        func count(at index: Int) -> Int { Int(message[index]) << 8 | Int(message[index + 1]) }
        let questions = count(at: 4)
        let records = count(at: 6) + count(at: 8)
        additionalCount = count(at: 10)
        var offset = 12
        for _ in 0..<questions {
            _ = try DNSQuery.skipName(message, at: &offset)
            guard offset + 4 <= message.count else { throw .malformed(offset: offset, "a question's type and class are missing") }
            offset += 4
        }
        for index in 0..<(records + additionalCount) {
            let nameStart = offset
            _ = try DNSQuery.skipName(message, at: &offset)
            guard offset + 10 <= message.count else { throw .malformed(offset: offset, "a record's fixed fields are cut off") }
            let type = UInt16(message[offset]) << 8 | UInt16(message[offset + 1])
            let length = Int(message[offset + 8]) << 8 | Int(message[offset + 9])
            let rdataStart = offset + 10
            guard rdataStart + length <= message.count else { throw .malformed(offset: offset + 8, "a record's data runs past the end") }
            if index >= records, type == DNSMessageEditing.optType {
                guard opt == nil else { throw .malformed(offset: nameStart, "a second OPT record (RFC 6891 §6.1.1 allows one)") }
                guard message[nameStart] == 0 else { throw .malformed(offset: nameStart, "the OPT record's name is not the root") }
                let payloadSize = Int(message[offset + 2]) << 8 | Int(message[offset + 3])
                opt = OPTRecord(start: nameStart, rdataStart: rdataStart, rdataEnd: rdataStart + length, payloadSize: payloadSize)
            }
            offset = rdataStart + length
        }
        guard offset == message.count else { throw .malformed(offset: offset, "\(message.count - offset) bytes follow the last record") }
        end = offset
    }
}
