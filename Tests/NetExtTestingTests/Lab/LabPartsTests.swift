import NetExtCore
@testable import NetExtTesting
import Testing

@Suite("Lab parts: echo packets and the namespace lab's route reading")
struct LabPartsTests {
    @Test("an echo request parses back to what was built; its reply swaps the addresses and keeps the rest")
    func echoRoundTrip() throws {
        for sequence in [UInt16(0), 1, 0xffff] {
            let request = EchoPacket.request(from: [10, 99, 0, 2], to: [10, 20, 0, 5], identifier: 0x4e58, sequence: sequence)
            let parsed = try #require(EchoPacket.parse(request))
            #expect(parsed.isRequest && parsed.identifier == 0x4e58 && parsed.sequence == sequence)
            #expect(parsed.source == [10, 99, 0, 2] && parsed.destination == [10, 20, 0, 5] && parsed.payload.count == 32)
            let reply = try #require(EchoPacket.parse(EchoPacket.reply(to: parsed)))
            #expect(!reply.isRequest && reply.source == parsed.destination && reply.destination == parsed.source && reply.payload == parsed.payload)
        }
    }

    @Test("a damaged, truncated, fragmented or non-ICMP packet is not an echo")
    func echoRefusals() {
        let request = EchoPacket.request(from: [10, 99, 0, 2], to: [10, 20, 0, 5], identifier: 7, sequence: 1)
        var damaged = request
        damaged[30] ^= 0x01
        #expect(EchoPacket.parse(damaged) == nil)
        #expect(EchoPacket.parse(Array(request.prefix(27))) == nil)
        var fragment = request
        fragment[6] = 0x20  // more fragments
        #expect(EchoPacket.parse(fragment) == nil)
        var udp = request
        udp[9] = 17
        #expect(EchoPacket.parse(udp) == nil)
        #expect(EchoPacket.parse([]) == nil)
        for length in 0..<request.count { _ = EchoPacket.parse(Array(request.prefix(length))) }
    }

    @Test("tunnel routes are read from netextd's own tables only, with default and host routes written as prefixes")
    func routeReading() {
        let ipv4 = """
            0.0.0.0/0 dev netext0 table 7100 scope link
            default dev netext1 table 7101 scope link
            10.20.0.0/16 dev netext0 table 7100 scope link
            10.20.0.53 dev netext0 table 7100 scope link
            default via 198.51.100.1 dev eth0
            10.99.0.0/24 dev netext0 proto kernel scope link src 10.99.0.2
            local 10.99.0.2 dev netext0 table local proto kernel scope host src 10.99.0.2
            """
        #expect(NamespaceLab.tunnelRoutes(in: ipv4, isIPv6: false) == ["0.0.0.0/0", "0.0.0.0/0", "10.20.0.0/16", "10.20.0.53/32"])
        let ipv6 = """
            fd20::/64 dev netext0 table 7100 metric 1024 pref medium
            fe80::/64 dev netext0 proto kernel metric 256 pref medium
            multicast ff00::/8 dev netext0 table local proto kernel metric 256 pref medium
            """
        #expect(NamespaceLab.tunnelRoutes(in: ipv6, isIPv6: true) == ["fd20::/64"])
    }
}
