import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

/// The address query captive portal detection sends to the network's DNS server, and the
/// reading of its answer (RFC 1035 §4.1; A §3.2.2, AAAA RFC 3596 §2.1, CNAME §3.3.1).
@Suite("DNS address queries and their answers")
struct DNSAddressQueryTests {
    /// An answer to `query`: its header (QR, RD, RA and `code`), its question, and `records`.
    static func answer(to query: DNSAddressQuery, code: UInt8 = 0, id: UInt16? = nil, records: [[UInt8]]) -> [UInt8] {
        let id = id ?? query.id
        var message = [UInt8(id >> 8), UInt8(id & 0xff), 0x81, 0x80 | code, 0, 1, 0, UInt8(records.count), 0, 0, 0, 0]
        message += query.message[12...]
        for record in records { message += record }
        return message
    }

    /// A record owned by the question's name (a pointer to offset 12), or by `owner`'s labels.
    static func record(type: UInt16, data: [UInt8], owner: [UInt8] = [0xc0, 12]) -> [UInt8] {
        owner + [UInt8(type >> 8), UInt8(type & 0xff), 0, 1, 0, 0, 0x0e, 0x10, UInt8(data.count >> 8), UInt8(data.count & 0xff)] + data
    }

    static func labels(_ name: String) -> [UInt8] {
        name.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    @Test("the query: RD set, one question of type A or AAAA, class IN; it parses back as what it asks")
    func builtQueryParsesBack() throws {
        let query = try DNSAddressQuery(name: "Portal.Lab.Test.", id: 0xbeef)
        #expect(query.name == "portal.lab.test")
        #expect(Array(query.message.prefix(12)) == [0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0])
        let parsed = try DNSQuery(parsing: query.message)
        #expect(parsed.id == 0xbeef && parsed.name == "portal.lab.test" && parsed.type == 1 && parsed.questionClass == 1)
        #expect(parsed.questionEnd == query.message.count)
        let six = try DNSAddressQuery(name: "portal.lab.test", type: .aaaa, id: 7)
        #expect(try DNSQuery(parsing: six.message).type == 28)
    }

    @Test("names a query cannot carry are refused, saying why", arguments: [
        ("", "empty name"), (".", "empty name"), ("a..b", "label of 0 bytes"), (String(repeating: "x", count: 64) + ".test", "label of 64 bytes"),
        (Array(repeating: String(repeating: "y", count: 60), count: 5).joined(separator: "."), "longer than 255 bytes"),
    ])
    func refusedNames(name: String, fault: String) {
        #expect { try DNSAddressQuery(name: name, id: 1) } throws: { error in "\(error)".contains(fault) }
    }

    @Test("an answer's A records for the name, through a CNAME chain; records of other names, types and classes passed over")
    func addressesThroughAliases() throws {
        let query = try DNSAddressQuery(name: "portal.lab.test", id: 0x1234)
        let alias = Self.labels("edge.lab.test")
        let answer = Self.answer(to: query, records: [
            Self.record(type: 5, data: alias),
            Self.record(type: 1, data: [198, 51, 100, 1], owner: alias),
            Self.record(type: 1, data: [192, 0, 2, 9], owner: Self.labels("other.test")),
            Self.record(type: 28, data: [UInt8](repeating: 1, count: 16), owner: alias),
            Self.record(type: 1, data: [198, 51, 100, 2], owner: alias),
        ])
        #expect(try query.addresses(in: answer) == [[198, 51, 100, 1], [198, 51, 100, 2]])
        let six = try DNSAddressQuery(name: "portal.lab.test", type: .aaaa, id: 0x1234)
        var sixAnswer = Self.answer(to: six, records: [Self.record(type: 28, data: [UInt8](repeating: 0x20, count: 16))])
        #expect(try six.addresses(in: sixAnswer) == [[UInt8](repeating: 0x20, count: 16)])
        sixAnswer = Self.answer(to: six, records: [])
        #expect(try six.addresses(in: sixAnswer).isEmpty, "a name without AAAA records: no addresses, no error")
    }

    @Test("an answer to another query, an error, a truncated answer or a malformed record is refused, named")
    func refusedAnswers() throws {
        let query = try DNSAddressQuery(name: "portal.lab.test", id: 0x1234)
        let other = try DNSAddressQuery(name: "check.lab.test", id: 0x1234)
        let cases: [([UInt8], String)] = [
            (Self.answer(to: query, id: 0x4321, records: []), "identifier"),
            (Self.answer(to: other, records: []), "check.lab.test"),
            (Self.answer(to: query, code: 3, records: []), "does not exist (NXDOMAIN)"),
            (Self.answer(to: query, code: 2, records: []), "response code 2"),
            (query.message, "a query, not a response"),
            ({ var truncated = Self.answer(to: query, records: []); truncated[2] |= 0x02; return truncated }(), "truncated"),
            (Self.answer(to: query, records: [Self.record(type: 1, data: [1, 2, 3])]), "an address record of 3 bytes"),
            (Array(Self.answer(to: query, records: [Self.record(type: 1, data: [1, 2, 3, 4])]).dropLast(2)), "runs past the end"),
        ]
        for (answer, fault) in cases {
            #expect { try query.addresses(in: answer) } throws: { error in "\(error)".contains(fault) }
        }
    }

    @Test("4,000 damaged answers: each read or refused, never a crash, and never an address the answer does not hold")
    func damagedAnswers() throws {
        var random = SplitMix64(state: 0xD45_0A)
        let query = try DNSAddressQuery(name: "portal.lab.test", id: 0x1234)
        let alias = Self.labels("edge.lab.test")
        let good = Self.answer(to: query, records: [Self.record(type: 5, data: alias), Self.record(type: 1, data: [198, 51, 100, 1], owner: alias)])
        for round in 0..<4_000 {
            var damaged = good
            if round % 4 == 0 {
                damaged = Array(damaged.prefix(Int(random.next() % UInt64(damaged.count))))
            } else {
                for _ in 0...(random.next() % 4) { damaged[Int(random.next() % UInt64(damaged.count))] = UInt8(truncatingIfNeeded: random.next()) }
            }
            if let addresses = try? query.addresses(in: damaged) {
                for address in addresses {
                    #expect(address.count == 4)
                    #expect(damaged.indices.contains { damaged[$0...].starts(with: address) }, "an address not in the answer")
                }
            }
        }
    }

    @Test("DHCP option 6 (RFC 2132 §3.8): the network's DNS servers in order; none without it; a length not a multiple of 4 refused")
    func dhcpNameServers() throws {
        let two = try DHCPv4Message.parse(CaptivePortalParsingTests.dhcpReply(options: CaptivePortalParsingTests.option(6, [198, 51, 100, 1, 10, 0, 0, 53]) + [255]))
        #expect(try two.domainNameServers() == ["198.51.100.1", "10.0.0.53"])
        let none = try DHCPv4Message.parse(CaptivePortalParsingTests.dhcpReply(options: [255]))
        #expect(try none.domainNameServers().isEmpty)
        let odd = try DHCPv4Message.parse(CaptivePortalParsingTests.dhcpReply(options: CaptivePortalParsingTests.option(6, [198, 51, 100, 1, 9]) + [255]))
        #expect { try odd.domainNameServers() } throws: { error in "\(error)".contains("option 6 (DNS servers) is 5 bytes") }
    }
}
