import HTTPCapsules
import NetExtTestSupport
import NetExtCore
import Testing

@Suite("connect-ip capsules (RFC 9484 §4.7)")
struct IPProxyingCapsuleTests {
    @Test("ADDRESS_ASSIGN: an IPv4 /32 answering request 1 and an unsolicited IPv6 /64, byte for byte, and back")
    func addressAssign() throws {
        let capsule = IPProxyingCapsule.addressAssign([
            AssignedAddress(requestID: 1, prefix: IPPrefix(address: [192, 0, 2, 7], length: 32)),
            AssignedAddress(requestID: 0, prefix: IPPrefix(address: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12), length: 64)),
        ]).capsule
        // Type 0x01; length 1+1+4+1 + 1+1+16+1 = 26; then the entries.
        #expect(capsule.encoded == [0x01, 26, 1, 4, 192, 0, 2, 7, 32, 0, 6, 0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12) + [64])
        #expect(try IPProxyingCapsule(capsule) == .addressAssign([
            AssignedAddress(requestID: 1, prefix: IPPrefix(address: [192, 0, 2, 7], length: 32)),
            AssignedAddress(requestID: 0, prefix: IPPrefix(address: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12), length: 64)),
        ]))
        // An empty ADDRESS_ASSIGN takes every address back: valid.
        #expect(try IPProxyingCapsule(Capsule(.addressAssign, value: [])) == .addressAssign([]))
    }

    @Test("ADDRESS_REQUEST: any IPv4 address under request 7; an empty request, request ID 0, IP version 5 or prefix length 33 are malformed, each said with its offset")
    func addressRequest() throws {
        let any4 = IPProxyingCapsule.addressRequest([RequestedAddress(requestID: 7, prefix: IPPrefix(address: [0, 0, 0, 0], length: 32))])
        #expect(try IPProxyingCapsule(any4.capsule) == any4)
        func refusal(_ value: [UInt8]) -> String? {
            do {
                _ = try IPProxyingCapsule(Capsule(.addressRequest, value: value))
                return nil
            } catch { return error.description }
        }
        #expect(refusal([])?.contains("at least one address") == true)
        #expect(refusal([0, 4, 10, 0, 0, 1, 32])?.contains("Request ID 0") == true)
        #expect(refusal([1, 5, 10, 0, 0, 1, 32])?.contains("offset 1 of its value: IP Version 5") == true)
        #expect(refusal([1, 4, 10, 0, 0, 1, 33])?.contains("offset 6 of its value: IP Prefix Length 33") == true)
        #expect(refusal([1, 4, 10, 0, 0])?.contains("ends inside IP Address") == true)
    }

    @Test("ROUTE_ADVERTISEMENT: ordered ranges pass; start after end, overlap, or out of order are malformed (RFC 9484 §4.7.3)")
    func routes() throws {
        let ranges = [
            IPAddressRange(version: 4, start: [10, 0, 0, 0], end: [10, 255, 255, 255]),
            IPAddressRange(version: 4, start: [192, 0, 2, 0], end: [192, 0, 2, 255]),
            IPAddressRange(version: 4, start: [192, 0, 2, 0], end: [192, 0, 2, 255], ipProtocol: 17),
            IPAddressRange(version: 6, start: [UInt8](repeating: 0, count: 16), end: [UInt8](repeating: 0xFF, count: 16)),
        ]
        let advertisement = IPProxyingCapsule.routeAdvertisement(ranges)
        // Type (1 byte), length 64 (a two-byte varint), three IPv4 ranges of 10 bytes, one IPv6 of 34.
        #expect(advertisement.capsule.encoded.count == 3 + 3 * 10 + 34)
        #expect(try IPProxyingCapsule(advertisement.capsule) == advertisement)
        func malformed(_ ranges: [IPAddressRange]) -> Bool {
            (try? IPProxyingCapsule(IPProxyingCapsule.routeAdvertisement(ranges).capsule)) == nil
        }
        #expect(malformed([IPAddressRange(version: 4, start: [10, 0, 0, 9], end: [10, 0, 0, 1])]))
        #expect(malformed([ranges[0], IPAddressRange(version: 4, start: [10, 1, 0, 0], end: [10, 2, 0, 0])]))
        #expect(malformed([ranges[1], ranges[0]]))
        #expect(malformed([ranges[3], ranges[0]]))
        #expect(!malformed([ranges[0], ranges[2]]))
    }

    @Test("a DATAGRAM capsule or one of an unknown type is not a connect-ip capsule (nil, not an error)")
    func otherTypes() throws {
        #expect(try IPProxyingCapsule(ProxiedDatagram(payload: [0x45]).capsule) == nil)
        #expect(try IPProxyingCapsule(Capsule(type: 0x2A, value: [1, 2, 3])) == nil)
    }

    @Test("random values of the three types never crash the reader, and what it accepts writes back to the same bytes", arguments: [UInt64(21), 22, 23])
    func fuzz(seed: UInt64) {
        var random = SplitMix64(state: seed &* 0x2545_F491_4F6C_DD1D)
        var accepted = 0
        for _ in 0..<3_000 {
            let type = UInt64(1 + random.below(3))
            // Mostly well-formed-looking values: versions 4/6 and small IDs, lengths near an entry's.
            var value: [UInt8] = []
            for _ in 0..<random.below(3) {
                if type != 3 { value.append(UInt8(random.below(3))) }
                let version: UInt8 = random.below(2) == 0 ? 4 : 6
                value.append(random.below(20) == 0 ? 5 : version)
                let size = version == 4 ? 4 : 16
                value += random.bytes(type == 3 ? 2 * size : size)
                value.append(type == 3 ? UInt8(random.below(3)) : UInt8(random.below(140)))
            }
            if random.below(10) == 0, !value.isEmpty { value.removeLast() }
            let capsule = Capsule(type: type, value: value)
            if let parsed = try? IPProxyingCapsule(capsule) {
                accepted += 1
                #expect(parsed.capsule == capsule)
            }
        }
        #expect(accepted > 0)
    }
}
