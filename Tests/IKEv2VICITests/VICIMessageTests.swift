import IKEv2VICI
import NetExtCore
import NetExtTestSupport
import Testing

/// strongSwan's VICI encoding (the IKEv2 client's control channel to charon): the bytes the
/// protocol description gives, round trips of random messages, and refusal of malformed input.
@Suite("IKEv2: VICI messages and packets")
struct VICIMessageTests {
    @Test("a key/value, a list and a section encode as the protocol description lays them out")
    func knownBytes() throws {
        let message = VICIMessage([.text("a", "b"), .list("l", ["x", ""]), .section("s", [.text("k", "v")])])
        let expected: [UInt8] = [
            3, 1, 0x61, 0, 1, 0x62,            // key/value "a" = "b"
            4, 1, 0x6c, 5, 0, 1, 0x78, 5, 0, 0, 6,   // list "l": "x", "", end
            1, 1, 0x73, 3, 1, 0x6b, 0, 1, 0x76, 2, // section "s" { "k" = "v" }
        ]
        #expect(try message.encoded() == expected)
        #expect(try VICIMessage.decode(expected[...]) == message)
        let packet = VICIPacket(.commandRequest, name: "version", message: VICIMessage())
        #expect(try packet.framed() == [0, 0, 0, 9, 0, 7] + Array("version".utf8))
    }

    static func randomBytes(_ random: inout SplitMix64, maximum: Int) -> [UInt8] {
        (0..<Int.random(in: 0...maximum, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    static func randomName(_ random: inout SplitMix64) -> String {
        String((0..<Int.random(in: 1...12, using: &random)).map { _ in "abcdefghijklmnopqrstuvwxyz-_0123456789".randomElement(using: &random)! })
    }

    static func randomMessage(_ random: inout SplitMix64, depth: Int) -> VICIMessage {
        VICIMessage((0..<Int.random(in: 0...5, using: &random)).map { _ in
            let name = randomName(&random)
            switch Int.random(in: 0...(depth < 4 ? 2 : 1), using: &random) {
            case 0: return VICIMessage.Entry(name, .value(randomBytes(&random, maximum: 40)))
            case 1: return VICIMessage.Entry(name, .list((0..<Int.random(in: 0...4, using: &random)).map { _ in randomBytes(&random, maximum: 20) }))
            default: return VICIMessage.Entry(name, .section(randomMessage(&random, depth: depth + 1)))
            }
        })
    }

    @Test("random messages survive packet framing and reading unchanged (2,000 cases)")
    func roundTrips() throws {
        var random = SplitMix64(state: 0x5649_4349)
        let kinds: [VICIPacket.Kind] = [.commandRequest, .commandResponse, .event, .eventConfirm]
        for _ in 0..<2000 {
            let kind = kinds.randomElement(using: &random)!
            let packet = VICIPacket(kind, name: kind.isNamed ? Self.randomName(&random) : nil, message: Self.randomMessage(&random, depth: 0))
            let framed = try packet.framed()
            let length = try VICIPacket.length(ofHeader: Array(framed.prefix(4)))
            #expect(length == framed.count - 4)
            let read = try VICIPacket.decode(body: framed[4...])
            #expect(read == packet)
        }
    }

    @Test("random bytes are read or refused with an offset inside them; what is read re-encodes to the same bytes (20,000 cases)")
    func fuzz() {
        var random = SplitMix64(state: 0xF022)
        var accepted = 0
        for round in 0..<20_000 {
            var bytes = Self.randomBytes(&random, maximum: 48)
            // Half the cases start from a valid encoding with one byte changed, to get deeper.
            if round % 2 == 0, let valid = try? Self.randomMessage(&random, depth: 0).encoded(), !valid.isEmpty {
                bytes = valid
                bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            do {
                let message = try VICIMessage.decode(bytes[...])
                accepted += 1
                let again = try message.encoded()
                #expect(again == bytes, "round \(round)")
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count, "round \(round): \(error)")
            }
        }
        #expect(accepted > 100)
    }

    @Test("truncated, unbalanced and over-deep messages are refused, naming the offset")
    func malformed() throws {
        let valid = try VICIMessage([.section("conn", [.list("remote_addrs", ["203.0.113.2"]), .text("version", "2")])]).encoded()
        for cut in 1..<valid.count {
            #expect(throws: VICIError.self, "cut at \(cut)") { try VICIMessage.decode(valid[..<cut]) }
        }
        #expect(throws: VICIError("section end without a section", offset: 0)) { try VICIMessage.decode([2][...]) }
        #expect(throws: VICIError("list element outside a list", offset: 0)) { try VICIMessage.decode([5, 0, 0][...]) }
        #expect(throws: VICIError("unknown element type 9", offset: 6)) { try VICIMessage.decode([3, 1, 0x61, 0, 1, 0x62, 9][...]) }
        #expect(throws: VICIError("empty name", offset: 1)) { try VICIMessage.decode([3, 0, 0, 0][...]) }
        let deep = [UInt8]((0..<40).map { _ -> [UInt8] in [1, 1, 0x73] }.joined())
        #expect(throws: VICIError("sections nested deeper than 32", offset: 96)) { try VICIMessage.decode(deep[...]) }
        // Values and names that do not fit their length fields are refused when encoding.
        #expect(throws: VICIError.self) { try VICIMessage([.init("v", .value([UInt8](repeating: 0, count: 70_000)))]).encoded() }
        #expect(throws: VICIError.self) { try VICIMessage([.text(String(repeating: "n", count: 256), "")]).encoded() }
    }

    @Test("packets: unknown types, missing names and oversized lengths are refused")
    func malformedPackets() throws {
        #expect(throws: VICIError("unknown packet type 8", offset: 0)) { try VICIPacket.decode(body: [8][...]) }
        #expect(throws: VICIError.self) { try VICIPacket.decode(body: [0][...]) }
        #expect(throws: VICIError.self) { try VICIPacket.decode(body: [7, 5, 0x61][...]) }
        #expect(throws: VICIError("empty packet", offset: 0)) { try VICIPacket.length(ofHeader: [0, 0, 0, 0]) }
        #expect(throws: VICIError("packet length 524289 is above 524288", offset: 0)) { try VICIPacket.length(ofHeader: [0, 8, 0, 1]) }
        #expect(throws: VICIError.self) { try VICIPacket(.event).framed() }
        // An error inside the message counts its offset from the packet body's start.
        #expect(throws: VICIError("unknown element type 9", offset: 1)) { try VICIPacket.decode(body: [1, 9][...]) }
        let response = try VICIPacket.decode(body: [1, 3, 7, 0x73, 0x75, 0x63, 0x63, 0x65, 0x73, 0x73, 0, 3, 0x79, 0x65, 0x73][...])
        #expect(response.kind == .commandResponse && response.name == nil && response.message[text: "success"] == "yes")
    }
}
