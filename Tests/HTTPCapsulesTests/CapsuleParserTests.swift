import HTTPCapsules
import NetExtTestSupport
import Testing
import VariableLengthIntegers

@Suite("HTTP capsules (RFC 9297): the codec and the stream parser")
struct CapsuleParserTests {
    @Test("varints as RFC 9000 §A.1 writes them, in their shortest form, and their lengths")
    func varints() {
        for (bytes, value) in [([0x25], 37), ([0x7b, 0xbd], 15_293), ([0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
                               ([0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652)] as [([UInt8], UInt64)] {
            var offset = 0
            #expect(QUICVarint.read(bytes, &offset) == value)
            #expect(offset == bytes.count)
            #expect(QUICVarint.encodedLength(value) == bytes.count)
        }
        // RFC 9000 §A.1: the two-byte 0x4025 is also 37 (not the shortest form, still valid).
        var offset = 0
        #expect(QUICVarint.read([0x40, 0x25], &offset) == 37)
    }

    @Test("a DATAGRAM capsule with context ID 0 is type 0x00, its length, then the context ID and the payload")
    func datagramWireForm() throws {
        let datagram = ProxiedDatagram(payload: Array("hello".utf8))
        #expect(datagram.capsule.encoded == [0x00, 0x06, 0x00] + Array("hello".utf8))
        let parsed = try ProxiedDatagram(datagram.capsule)
        #expect(parsed == datagram)
        // A context ID that needs two bytes (an extension's; dropped by a receiver without it).
        let other = ProxiedDatagram(contextID: 100, payload: [1, 2])
        #expect(other.capsule.encoded == [0x00, 0x04, 0x40, 0x64, 1, 2])
        #expect(try ProxiedDatagram(other.capsule).contextID == 100)
        #expect(throws: CapsuleError.self) { try ProxiedDatagram(datagramCapsuleValue: []) }
        #expect(throws: CapsuleError.self) { try ProxiedDatagram(Capsule(type: 0x01, value: [0])) }
    }

    @Test("the packet path's capsules (appendCapsuleHeader, then the payload) are byte for byte the DATAGRAM capsules, for payloads of every length class, and parse back in order")
    func appendedCapsulesMatch() throws {
        var appended: [UInt8] = []
        var expected: [UInt8] = []
        var payloads: [[UInt8]] = []
        for length in [0, 1, 62, 63, 64, 1_000, 16_382, 16_383, 16_384, 65_535] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ length) }
            payloads.append(payload)
            ProxiedDatagram.appendCapsuleHeader(payloadLength: payload.count, to: &appended)
            appended += payload
            expected += ProxiedDatagram(payload: payload).capsule.encoded
        }
        #expect(appended == expected)
        var parser = CapsuleParser()
        parser.append(appended)
        for payload in payloads {
            let capsule = try #require(try parser.next())
            #expect(try ProxiedDatagram(capsule).payload == payload)
        }
        #expect(try parser.next() == nil)
    }

    @Test("capsules split at every byte boundary come out whole and in order", arguments: [UInt64(1), 2, 3, 4, 5])
    func everySplit(seed: UInt64) throws {
        var random = SplitMix64(state: seed &* 0x9E37_79B9_7F4A_7C15)
        let capsules = (0..<6).map { _ in
            Capsule(type: [0, 1, 2, 3, 0x2A, 0x4000, 0x1234_5678][random.below(7)], value: random.bytes([0, 1, 63, 64, 300, 16_384][random.below(6)]))
        }
        let stream = capsules.flatMap(\.encoded)
        for split in Set([0, 1, 2, 3, stream.count / 2, stream.count - 1, stream.count] + (0..<20).map { _ in random.below(stream.count + 1) }) {
            var parser = CapsuleParser()
            parser.append(stream[..<split])
            var out = try parser.all()
            parser.append(stream[split...])
            out += try parser.all()
            #expect(out == capsules, "split at \(split)")
            try parser.finish()
        }
        // One byte at a time.
        var parser = CapsuleParser()
        var out: [Capsule] = []
        for byte in stream {
            parser.append([byte])
            out += try parser.all()
        }
        #expect(out == capsules)
    }

    @Test("a capsule announcing more than the limit is refused before its value arrives, naming its type, length and stream offset")
    func oversized() throws {
        var parser = CapsuleParser(maximumValueLength: 1_000)
        parser.append(Capsule(type: 0, value: [1, 2, 3]).encoded)
        // Type 0x00, length 5000 (0x5388), and no value yet.
        parser.append([0x00, 0x53, 0x88])
        #expect(try parser.next() == Capsule(type: 0, value: [1, 2, 3]))
        #expect(throws: CapsuleError.valueTooLong(type: 0, length: 5_000, limit: 1_000, offset: 5)) { try parser.next() }
        #expect("\(CapsuleError.valueTooLong(type: 0, length: 5_000, limit: 1_000, offset: 5))".contains("stream offset 5"))
    }

    @Test("a stream that ends inside a capsule is malformed (RFC 9297 §3.3); one that ends between capsules is not")
    func truncated() throws {
        var parser = CapsuleParser()
        parser.append([0x00, 0x05, 0x00, 0x61])
        #expect(try parser.next() == nil)
        #expect(throws: CapsuleError.truncatedStream(bufferedBytes: 4, offset: 0)) { try parser.finish() }
        parser.append([0x62, 0x63, 0x64])
        #expect(try parser.next() == Capsule(type: 0, value: [0x00, 0x61, 0x62, 0x63, 0x64]))
        try parser.finish()
    }

    @Test("random bytes never crash the parser: it yields capsules, waits for more, or refuses with an offset inside what it was given", arguments: [UInt64(11), 12, 13, 14])
    func fuzz(seed: UInt64) {
        var random = SplitMix64(state: seed &* 0xD1B5_4A32_D192_ED03)
        for _ in 0..<400 {
            var parser = CapsuleParser(maximumValueLength: 2_048)
            let input = random.bytes(random.below(600))
            var fed = 0
            while fed < input.count {
                let piece = min(input.count - fed, 1 + random.below(64))
                parser.append(input[fed..<fed + piece])
                fed += piece
                do {
                    while let capsule = try parser.next() { #expect(capsule.value.count <= 2_048) }
                } catch {
                    if case let .valueTooLong(_, _, _, offset) = error { #expect(offset < fed) }
                    break
                }
            }
            #expect(parser.bufferedCount <= input.count)
        }
    }

    @Test("a long stream of small capsules keeps the parser's buffer small (consumed bytes are dropped)")
    func bufferStaysSmall() throws {
        var parser = CapsuleParser()
        let capsule = ProxiedDatagram(payload: [UInt8](repeating: 7, count: 1_200)).capsule.encoded
        for _ in 0..<2_000 {
            parser.append(capsule + capsule.prefix(10))
            _ = try parser.all()
            parser.append(capsule.dropFirst(10))
            #expect(try parser.all().count == 1)
        }
        #expect(parser.bufferedCount == 0)
    }
}
