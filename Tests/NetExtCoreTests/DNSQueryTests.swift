import NetExtCore
import NetExtTestSupport
import Testing

@Suite("DNS stub: query parsing and routing")
struct DNSQueryTests {
    /// A query for `name` of `type` (RFC 1035 §4.1), recursion desired.
    func query(_ name: String, type: UInt16 = 1, id: UInt16 = 0xbeef) -> [UInt8] {
        var message: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") {
            message.append(UInt8(label.utf8.count))
            message += Array(label.utf8)
        }
        message += [0, UInt8(type >> 8), UInt8(type & 0xff), 0, 1]
        return message
    }

    @Test("a query's identifier, name (lowercased) and type are read")
    func parsesQuery() throws {
        let parsed = try DNSQuery(parsing: query("Intranet.Office.TEST", type: 28, id: 0x1234))
        #expect(parsed.id == 0x1234)
        #expect(parsed.name == "intranet.office.test")
        #expect(parsed.type == 28)
        #expect(parsed.questionEnd == 12 + 22 + 4)
    }

    @Test("compression pointers are followed; loops and forward pointers are refused")
    func compression() throws {
        // Header, then "office.test" at 12, then a question "a" + pointer to 12.
        var message: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        message += [6] + Array("office".utf8) + [4] + Array("test".utf8) + [0]
        message += [0, 1, 0, 1]
        // A first question that is only a pointer: to itself (a loop), then forward.
        var pointing: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1]
        #expect(throws: DNSParseError.self) { try DNSQuery(parsing: pointing) }  // points at itself
        pointing[13] = 20
        #expect(throws: DNSParseError.self) { try DNSQuery(parsing: pointing) }  // points forward
        #expect(try DNSQuery(parsing: message).name == "office.test")
        // A name that ends in a pointer to an earlier one: "a" + → "office.test".
        var second: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, UInt8(ascii: "a"), 0xc0, 16, 0, 1, 0, 1]
        second += [6] + Array("office".utf8) + [4] + Array("test".utf8) + [0]
        #expect(throws: DNSParseError.self) { try DNSQuery(parsing: second) }  // forward again
        let backward: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, UInt8(ascii: "t"), UInt8(ascii: "e"), UInt8(ascii: "s"), UInt8(ascii: "t"), 0xc0, 12, 0, 1, 0, 1]
        #expect(throws: DNSParseError.self) { try DNSQuery(parsing: backward) }  // a loop through itself
    }

    @Test("responses, empty and truncated messages are refused with the offset at fault")
    func refusals() {
        #expect(throws: DNSParseError.malformed(offset: 5, "shorter than the 12-byte header")) { try DNSQuery(parsing: [1, 2, 3, 4, 5]) }
        var response = query("a.test")
        response[2] |= 0x80
        #expect(throws: DNSParseError.malformed(offset: 2, "a response, not a query")) { try DNSQuery(parsing: response) }
        let truncated = Array(query("a.test").dropLast(3))
        #expect(throws: DNSParseError.self) { try DNSQuery(parsing: truncated) }
    }

    @Test("random bytes are parsed or refused, never crash")
    func fuzz() {
        var random = SplitMix64(state: 5)
        for round in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0..<80, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round % 2 == 0, bytes.count > 12 { bytes[2] &= 0x7f; bytes[4] = 0; bytes[5] = 1 }
            if let parsed = try? DNSQuery(parsing: bytes) {
                #expect(parsed.questionEnd <= bytes.count)
                let failure = parsed.serverFailure(for: bytes)
                #expect(failure.count == parsed.questionEnd)
                #expect(failure[3] & 0x0f == 2)
            }
        }
    }

    /// The name reader written the plain way (labels collected, then joined): the oracle for
    /// the one-allocation reader and the skipper, on the same checks and errors.
    static func referenceName(_ message: [UInt8], at offset: inout Int) throws(DNSParseError) -> String {
        var labels: [String] = []
        var position = offset, jumped = false, jumps = 0, length = 0
        while true {
            guard position < message.count else { throw .malformed(offset: position, "the name runs past the end") }
            let byte = message[position]
            switch byte & 0xc0 {
            case 0x00:
                if byte == 0 {
                    if !jumped { offset = position + 1 }
                    return labels.joined(separator: ".")
                }
                let end = position + 1 + Int(byte)
                guard end <= message.count else { throw .malformed(offset: position, "a label runs past the end") }
                length += Int(byte) + 1
                guard length <= 255 else { throw .malformed(offset: position, "the name is longer than 255 bytes") }
                let lowered = message[(position + 1)..<end].map { (0x41...0x5a).contains($0) ? $0 + 0x20 : $0 }
                labels.append(String(decoding: lowered, as: UTF8.self))
                position = end
            case 0xc0:
                guard position + 1 < message.count else { throw .malformed(offset: position, "a compression pointer is cut off") }
                jumps += 1
                guard jumps <= 16 else { throw .malformed(offset: position, "too many compression pointers (a loop?)") }
                let target = Int(byte & 0x3f) << 8 | Int(message[position + 1])
                guard target < position else { throw .malformed(offset: position, "a compression pointer points forward") }
                if !jumped { offset = position + 2 }
                jumped = true
                position = target
            default:
                throw .malformed(offset: position, "label type \(byte >> 6) is not defined")
            }
        }
    }

    @Test("names read and skipped as the plain reader does: the same text (ASCII lowercased), end offset and error, over random names with labels, pointers and stray bytes")
    func nameReaderMatchesReference() {
        var random = SplitMix64(state: 11)
        var agreed = 0, refused = 0
        for _ in 0..<30_000 {
            // Mostly well-formed pieces (labels of mixed case, pointers backwards, the root), some noise.
            var message = (0..<Int.random(in: 0..<6, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            for _ in 0..<Int.random(in: 0..<12, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6:
                    let count = Int.random(in: 0..<(Int.random(in: 0..<8, using: &random) == 0 ? 64 : 12), using: &random)
                    message.append(UInt8(count))
                    message += (0..<count).map { _ in [UInt8(ascii: "A"), UInt8(ascii: "z"), UInt8(ascii: "-"), UInt8(ascii: "Q"), 0xc3, 0xa9, 0xff][Int.random(in: 0..<7, using: &random)] }
                case 6, 7:
                    let target = message.isEmpty ? 0 : Int.random(in: 0..<message.count + 2, using: &random)
                    message += [0xc0 | UInt8(target >> 8 & 0x3f), UInt8(target & 0xff)]
                case 8: message.append(0)
                default: message.append(UInt8.random(in: 0...255, using: &random))
                }
            }
            message.append(0)
            for start in 0..<min(message.count, 8) {
                var expectedEnd = start, readEnd = start, skipEnd = start
                let expected = Result { () throws(DNSParseError) in try Self.referenceName(message, at: &expectedEnd) }
                let read = Result { () throws(DNSParseError) in try DNSQuery.readName(message, at: &readEnd) }
                let skipped = Result { () throws(DNSParseError) in try DNSQuery.skipName(message, at: &skipEnd) }
                switch (expected, read, skipped) {
                case (.success(let name), .success(let text), .success(let length)):
                    #expect(text == name, "name at \(start) of \(message)")
                    #expect(readEnd == expectedEnd && skipEnd == expectedEnd)
                    #expect(length == name.utf8.count || name.contains("\u{FFFD}"), "text length at \(start) of \(message)")
                    agreed += 1
                case (.failure(let error), .failure(let readError), .failure(let skipError)):
                    #expect(readError == error && skipError == error)
                    refused += 1
                default:
                    Issue.record("the readers disagree at \(start) of \(message): \(expected) \(read) \(skipped)")
                }
            }
        }
        #expect(agreed > 10_000 && refused > 10_000, "both outcomes exercised: \(agreed) read, \(refused) refused")
    }

    @Test("SERVFAIL keeps the identifier and question")
    func serverFailure() throws {
        let message = query("x.office.test", id: 0x4242)
        let parsed = try DNSQuery(parsing: message)
        let reply = parsed.serverFailure(for: message)
        #expect(Array(reply[0..<2]) == [0x42, 0x42])
        #expect(reply[2] & 0x80 != 0)
        #expect(reply[3] == 0x82)
        #expect(Array(reply[12...]) == Array(message[12...]))
    }

    @Test("the longest match domain wins, on label boundaries; everything else goes to the system's servers")
    func routing() {
        let routing = DNSRouting(
            entries: [
                .init(owner: "a", matchDomains: ["office.test"], servers: ["10.20.0.53"]),
                .init(owner: "b", matchDomains: ["lab.office.test."], servers: ["10.30.0.53"]),
            ],
            defaultServers: ["198.51.100.53"])
        #expect(routing.servers(for: "intranet.office.test").servers == ["10.20.0.53"])
        #expect(routing.servers(for: "OFFICE.test.").servers == ["10.20.0.53"])
        #expect(routing.servers(for: "x.lab.office.test").servers == ["10.30.0.53"])
        #expect(routing.servers(for: "notoffice.test").servers == ["198.51.100.53"])
        #expect(routing.servers(for: "notoffice.test").matched == nil)
        #expect(routing.servers(for: "").servers == ["198.51.100.53"])
        #expect(!DNSRouting.name("a.test", isWithin: ""))
    }
}
