import NetExtCore
import NetExtTestSupport
import Testing

/// What netextd's resolver changes in a query before it goes over TLS or HTTPS, and how it
/// checks and fits the answer (RFC 7830, RFC 8467 §4.1, RFC 6891, RFC 1035 §4.1.1).
@Suite("DNS message editing: padding, answer checks, fitting answers to the client")
struct DNSMessageEditingTests {
    /// A query for `name` (RFC 1035 §4.1), with an OPT record (RFC 6891 §6.1.2) if `opt` gives
    /// its payload size and options.
    static func query(_ name: String, type: UInt16 = 1, id: UInt16 = 0xbeef, opt: (size: UInt16, options: [UInt8])? = nil) -> [UInt8] {
        var message: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, opt == nil ? 0 : 1]
        message += encodedName(name)
        message += [UInt8(type >> 8), UInt8(type & 0xff), 0, 1]
        if let opt {
            message += [0, 0, 41, UInt8(opt.size >> 8), UInt8(opt.size & 0xff), 0, 0, 0, 0, UInt8(opt.options.count >> 8), UInt8(opt.options.count & 0xff)]
            message += opt.options
        }
        return message
    }

    static func encodedName(_ name: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for label in name.split(separator: ".") {
            bytes.append(UInt8(label.utf8.count))
            bytes += Array(label.utf8)
        }
        return bytes + [0]
    }

    /// The answer to `query` with one A record (name compressed to the question) and, if
    /// `opt`, an OPT record with `padding` bytes of padding.
    static func answer(to query: [UInt8], address: [UInt8] = [192, 0, 2, 1], opt: Bool = false, padding: Int = 0) -> [UInt8] {
        var parsedEnd = 12
        _ = try? DNSQuery.readName(query, at: &parsedEnd)
        var message = Array(query[..<(parsedEnd + 4)])
        message[2] = 0x81
        message[3] = 0x80
        message[6] = 0; message[7] = 1
        message[8] = 0; message[9] = 0
        message[10] = 0; message[11] = opt ? 1 : 0
        message += [0xc0, 12, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4] + address
        if opt {
            let options: [UInt8] = padding > 0 ? [0, 12, UInt8(padding >> 8), UInt8(padding & 0xff)] + [UInt8](repeating: 0, count: padding) : []
            message += [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, UInt8(options.count >> 8), UInt8(options.count & 0xff)] + options
        }
        return message
    }

    @Test("a query without OPT gets one, padded to a multiple of 128 bytes; the header counts it")
    func padsWithoutOPT() throws {
        let plain = Self.query("www.example.test")
        let padded = try DNSMessageEditing.padded(plain)
        #expect(padded.count == 128)
        #expect(padded[10] == 0 && padded[11] == 1, "ARCOUNT 1")
        #expect(Array(padded[..<plain.count]) == plain.enumerated().map { $0.offset == 11 ? 1 : $0.element })
        // The OPT record: root, type 41, payload size 1232, TTL 0, then the padding option.
        let opt = Array(padded[plain.count..<(plain.count + 11)])
        #expect(opt[0] == 0 && opt[1] == 0 && opt[2] == 41 && opt[3] == 0x04 && opt[4] == 0xd0)
        #expect(padded[plain.count + 11] == 0 && padded[plain.count + 12] == 12, "option code 12 (RFC 7830)")
        #expect(try DNSQuery(parsing: padded).name == "www.example.test")
    }

    @Test("a query with OPT gets the padding option added to it; one already padded is left alone")
    func padsExistingOPT() throws {
        // A cookie option (RFC 7873, code 10, 8 bytes) is kept.
        let cookie: [UInt8] = [0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]
        let withOPT = Self.query("mail.example.test", opt: (4096, cookie))
        let padded = try DNSMessageEditing.padded(withOPT)
        #expect(padded.count % 128 == 0)
        #expect(padded[11] == 1, "still one additional record")
        #expect(Array(padded[..<withOPT.count]).elementsEqual(withOPT.enumerated().map { index, byte in
            // Only the OPT's RDLENGTH changes.
            index == withOPT.count - cookie.count - 2 || index == withOPT.count - cookie.count - 1 ? padded[index] : byte
        }))
        let alreadyPadded = Self.query("a.test", opt: (1232, [0, 12, 0, 3, 0, 0, 0]))
        #expect(try DNSMessageEditing.padded(alreadyPadded) == alreadyPadded)
    }

    @Test("padding lengths: every query length up to 300 bytes pads to the next multiple of 128")
    func paddingProperty() throws {
        var generator = SplitMix64(state: 8467)
        for _ in 0..<300 {
            let labels = Int.random(in: 1...6, using: &generator)
            let name = (0..<labels).map { _ in String(repeating: "a", count: Int.random(in: 1...40, using: &generator)) }.joined(separator: ".")
            let withOPT = Bool.random(using: &generator)
            let query = Self.query(name, opt: withOPT ? (1232, []) : nil)
            let padded = try DNSMessageEditing.padded(query)
            #expect(padded.count % 128 == 0, "\(query.count) bytes padded to \(padded.count)")
            #expect(padded.count - query.count < 128 + 15)
            #expect(try DNSMessageEditing.padded(padded) == padded, "padding twice changes nothing")
            #expect(try DNSQuery(parsing: padded).name == name)
        }
    }

    @Test("malformed queries are refused with the offset at fault, never a crash (fuzzed)")
    func fuzzedQueries() {
        var generator = SplitMix64(state: 7830)
        let seed = Self.query("www.example.test", opt: (1232, [0, 10, 0, 2, 9, 9]))
        var refused = 0
        for round in 0..<3000 {
            var bytes = seed
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                if round % 3 == 2 { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator)) }
            }
            do {
                let padded = try DNSMessageEditing.padded(bytes)
                #expect(padded.count % 128 == 0 || padded == bytes)
            } catch {
                refused += 1
                #expect(error.description.contains("offset"))
            }
            _ = DNSMessageEditing.mismatch(of: bytes, to: seed)
            _ = DNSMessageEditing.fitted(bytes, forQuery: seed, overUDP: true)
        }
        #expect(refused > 500)
    }

    @Test("an answer must be a response to the question asked: identifier, name (any case), type and class")
    func mismatches() {
        let query = Self.query("www.example.test", id: 7)
        #expect(DNSMessageEditing.mismatch(of: Self.answer(to: query), to: query) == nil)
        #expect(DNSMessageEditing.mismatch(of: Self.answer(to: Self.query("WWW.Example.TEST", id: 7)), to: query) == nil)
        #expect(DNSMessageEditing.mismatch(of: Self.answer(to: Self.query("www.example.test", id: 8)), to: query)?.contains("identifier") == true)
        #expect(DNSMessageEditing.mismatch(of: Self.answer(to: Self.query("evil.example.test", id: 7)), to: query)?.contains("evil.example.test") == true)
        #expect(DNSMessageEditing.mismatch(of: Self.answer(to: Self.query("www.example.test", type: 28, id: 7)), to: query)?.contains("type") == true)
        #expect(DNSMessageEditing.mismatch(of: query, to: query)?.contains("not a response") == true)
        #expect(DNSMessageEditing.mismatch(of: [0, 7, 0x81], to: query)?.contains("shorter") == true)
    }

    @Test("the OPT record netextd added comes off the answer; a long answer over UDP is truncated with TC")
    func fitting() throws {
        let plain = Self.query("www.example.test")
        let answer = Self.answer(to: plain, opt: true, padding: 400)
        let fitted = DNSMessageEditing.fitted(answer, forQuery: plain, overUDP: false)
        #expect(fitted == Self.answer(to: plain), "no OPT for a client that sent none")
        let withOPT = Self.query("www.example.test", opt: (1232, []))
        #expect(DNSMessageEditing.fitted(answer, forQuery: withOPT, overUDP: true) == answer, "a client with EDNS takes 1232 bytes")
        // 40 A records: 16 bytes each, past 512 for a client without EDNS.
        var long = Self.answer(to: plain)
        long[7] = 40
        for index in 1..<40 { long += [0xc0, 12, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, UInt8(index)] }
        let truncated = DNSMessageEditing.fitted(long, forQuery: plain, overUDP: true)
        #expect(truncated.count == plain.count)
        #expect(truncated[2] & 0x02 != 0, "TC set")
        #expect(truncated[6] == 0 && truncated[7] == 0)
        #expect(DNSMessageEditing.fitted(long, forQuery: plain, overUDP: false) == long, "over TCP nothing is cut")
    }
}
