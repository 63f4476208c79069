import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

/// NetExt's D-Bus wire format against bytes dbus-daemon and python-dbus wrote
/// (Tests/Fixtures/dbus), round trips of random values, and mutated messages.
@Suite("D-Bus wire format (D-Bus Specification, Marshaling and Message Format)")
struct DBusCodecTests {
    static func recorded() throws -> [[UInt8]] {
        let text = try String(contentsOf: Fixtures.directory.appendingPathComponent("dbus/networkmanager-mock.hex"), encoding: .utf8)
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            stride(from: 0, to: line.count, by: 2).map { offset in
                let start = line.index(line.startIndex, offsetBy: offset)
                return UInt8(line[start..<line.index(start, offsetBy: 2)], radix: 16)!
            }
        }
    }

    @Test("every recorded message decodes, and encoding it again decodes to the same message")
    func recordedMessagesRoundTrip() throws {
        let messages = try Self.recorded()
        #expect(messages.count == 31)
        for bytes in messages {
            let message = try DBusMessage(decoding: bytes)
            #expect(try DBusMessage.length(ofMessageStartingWith: Array(bytes.prefix(16))) == bytes.count)
            let again = try DBusMessage(decoding: message.encoded(serial: message.serial))
            #expect(again == message)
        }
    }

    @Test("the access point's GetAll answer reads as NetworkManager sent it")
    func accessPointProperties() throws {
        let answers = try Self.recorded().map { try DBusMessage(decoding: $0) }.filter { $0.kind == .methodReturn && $0.signature == "a{sv}" }
        let properties = try #require(answers.first?.body.first?.dictionaryValue)
        #expect(properties["Ssid"]?.bytesValue.map { String(decoding: $0, as: UTF8.self) } == "Café Libre")
        #expect(properties["HwAddress"]?.stringValue == "aa:bb:cc:00:00:01")
        #expect(properties["Strength"]?.unwrapped == .byte(80))
        #expect(properties["Frequency"]?.uintValue == 2437)
        #expect(properties["RsnFlags"]?.uintValue == 256)
        let list = try Self.recorded().map { try DBusMessage(decoding: $0) }.first { $0.kind == .methodReturn && $0.signature == "ao" }
        #expect(list?.body.first?.arrayValue?.compactMap(\.stringValue) == ["/org/freedesktop/NetworkManager/AccessPoint/cafe"])
        let added = try Self.recorded().map { try DBusMessage(decoding: $0) }.first { $0.member == "InterfacesAdded" }
        #expect(added?.signature == "oa{sa{sv}}", "the object manager's signal, three levels deep")
    }

    @Test("a method call encodes to the bytes the specification lays out")
    func methodCallLayout() throws {
        let call = DBusMessage.methodCall(destination: "a.b", path: "/", interface: "a.b", member: "M", body: [.byte(7), .uint32(1)])
        let bytes = try call.encoded(serial: 5)
        #expect(Array(bytes.prefix(12)) == [0x6C, 1, 0, 1, 8, 0, 0, 0, 5, 0, 0, 0], "'l', method call, no flags, version 1, body 8 bytes, serial 5")
        #expect(Array(bytes.suffix(8)) == [7, 0, 0, 0, 1, 0, 0, 0], "the byte, padding to 4, the uint32")
        #expect(bytes.count % 8 == 0)
    }

    @Test("random values of random types survive a round trip")
    func randomRoundTrips() throws {
        var random = SplitMix64(state: 0xD_B05)
        for _ in 0..<500 {
            let value = Self.randomValue(depth: 0, using: &random)
            var writer = DBusWriter()
            try writer.write(value)
            var reader = DBusReader(bytes: writer.bytes)
            let read = try reader.read(value.type)
            #expect(read == value, "\(value.type.signature)")
            #expect(reader.isAtEnd)
            #expect(try DBusType.parse(value.type.signature) == value.type)
        }
    }

    @Test("mutated and truncated recorded messages are refused with an offset, never a crash")
    func mutations() throws {
        var random = SplitMix64(state: 0xF00D)
        let messages = try Self.recorded()
        var refused = 0
        for round in 0..<4_000 {
            var bytes = messages[round % messages.count]
            if round % 5 == 0 {
                bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
            } else {
                for _ in 0..<(1 + random.next() % 4) { bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next()) }
            }
            do {
                _ = try DBusMessage(decoding: bytes)
            } catch {
                refused += 1
                guard case .malformedMessage(let offset, let reason) = error else { continue }
                #expect(offset >= 0 && offset <= max(bytes.count, 1 << 28) && !reason.isEmpty)
            }
        }
        #expect(refused > 2_000, "most mutations break the message (\(refused) of 4000 refused)")
    }

    @Test("malformed signatures and values are refused naming what is wrong")
    func refusals() throws {
        #expect(throws: DBusError.badSignature("a{vs}", reason: "at offset 3 a dictionary key must be a basic type, not v")) { try DBusType.parse("a{vs}") }
        #expect(throws: DBusError.self) { try DBusType.parse("(") }
        #expect(throws: DBusError.self) { try DBusType.parse("()") }
        #expect(throws: DBusError.self) { try DBusType.parse("a") }
        #expect(throws: DBusError.self) { try DBusType.parse("z") }
        #expect(throws: DBusError.self) { try DBusType.parse(String(repeating: "a", count: 33) + "y") }
        #expect(throws: DBusError.self) { try DBusType.parse("ss") }
        var writer = DBusWriter()
        #expect(throws: DBusError.self) { try writer.write(.objectPath("not/a/path")) }
        #expect(throws: DBusError.self) { try writer.write(.string("nul\u{0}inside")) }
        #expect(throws: DBusError.self) { try writer.write(.array(element: .string, [.uint32(1)])) }
        var reader = DBusReader(bytes: [2, 0, 0, 0])
        #expect(throws: DBusError.malformedMessage(offset: 0, reason: "a boolean holds 2, not 0 or 1")) { try reader.read(.boolean) }
        var bigEndian = DBusReader(bytes: [0, 0, 1, 0], bigEndian: true)
        #expect(try bigEndian.read(.uint32) == .uint32(256))
    }

    static func randomValue(depth: Int, using random: inout SplitMix64) -> DBusValue {
        let pick = random.next() % (depth > 3 ? 12 : 16)
        switch pick {
        case 0: return .byte(UInt8(truncatingIfNeeded: random.next()))
        case 1: return .boolean(random.next() % 2 == 0)
        case 2: return .int16(Int16(truncatingIfNeeded: random.next()))
        case 3: return .uint16(UInt16(truncatingIfNeeded: random.next()))
        case 4: return .int32(Int32(truncatingIfNeeded: random.next()))
        case 5: return .uint32(UInt32(truncatingIfNeeded: random.next()))
        case 6: return .int64(Int64(bitPattern: random.next()))
        case 7: return .uint64(random.next())
        case 8: return .double(Double(Int64(bitPattern: random.next() >> 12)) / 7)
        case 9: return .string(String((0..<(random.next() % 12)).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next() % 26))) }) + "é✓")
        case 10: return .objectPath(random.next() % 2 == 0 ? "/" : "/org/net_ext/\(random.next() % 100)")
        case 11: return .signature("a{sv}(iu)")
        case 12: return .variant(randomValue(depth: depth + 1, using: &random))
        case 13:
            let element = randomValue(depth: depth + 1, using: &random)
            let count = Int(random.next() % 4)
            var items = [element]
            for _ in 0..<count { items.append(sameType(as: element, using: &random)) }
            return .array(element: element.type, random.next() % 5 == 0 ? [] : items)
        case 14:
            let entries = (0..<(random.next() % 4)).map { index in
                DBusValue.DictionaryEntry(.string("key\(index)"), .variant(randomValue(depth: depth + 1, using: &random)))
            }
            return .dictionary(key: .string, value: .variant, entries)
        default:
            return .structure((0...(random.next() % 3)).map { _ in randomValue(depth: depth + 1, using: &random) })
        }
    }

    /// Another value of `value`'s type (the same value where making a new one is not worth it).
    static func sameType(as value: DBusValue, using random: inout SplitMix64) -> DBusValue {
        switch value {
        case .uint32: .uint32(UInt32(truncatingIfNeeded: random.next()))
        case .string: .string("s\(random.next() % 1000)")
        case .byte: .byte(UInt8(truncatingIfNeeded: random.next()))
        default: value
        }
    }
}
