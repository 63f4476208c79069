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
