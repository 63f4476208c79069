import Testing
@testable import NetExtCore

@Suite("IP packet headers")
struct IPPacketInfoTests {
    static let ipv4: [UInt8] = [0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 99, 0, 2, 10, 20, 0, 5] + [UInt8](repeating: 0, count: 8)

    @Test("IPv4 and IPv6 headers give length, addresses and protocol; padding is ignored")
    func parses() throws {
        let v4 = try #require(IPPacketInfo(Self.ipv4 + [0, 0, 0, 0]))
        #expect(!v4.isIPv6 && v4.length == 28 && v4.source == [10, 99, 0, 2] && v4.destination == [10, 20, 0, 5] && v4.ipProtocol == 17)
        var v6 = [UInt8](repeating: 0, count: 48)
        v6[0] = 0x60
        v6[5] = 8
        v6[6] = 58
        v6[23] = 2
        v6[39] = 1
        let info = try #require(IPPacketInfo(v6))
        #expect(info.isIPv6 && info.length == 48 && info.source.last == 2 && info.destination.last == 1 && info.ipProtocol == 58)
    }

    @Test("truncated or inconsistent headers are refused; random bytes never crash")
    func refuses() {
        #expect(IPPacketInfo(Array(Self.ipv4.prefix(19))) == nil)
        #expect(IPPacketInfo(Array(Self.ipv4.prefix(27))) == nil, "total length beyond the buffer")
        var badIHL = Self.ipv4
        badIHL[0] = 0x44
        #expect(IPPacketInfo(badIHL) == nil)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 0..<80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let info = IPPacketInfo(bytes) { #expect(info.length <= bytes.count) }
        }
    }
}
