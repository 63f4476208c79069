import Testing
@testable import NetExtCore

@Suite("Packets that belong to their link and never enter a tunnel")
struct LinkScopeTests {
    /// A 40-byte IPv6 header with the given addresses (written as 16 bytes each).
    static func ipv6(source: [UInt8], destination: [UInt8]) -> [UInt8] {
        [0x60, 0, 0, 0, 0, 0, 58, 255] + source + destination
    }

    static func v6(_ groups: [UInt16]) -> [UInt8] {
        precondition(groups.count == 8)
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    static func ipv4(source: [UInt8], destination: [UInt8]) -> [UInt8] {
        [0x45, 0, 0, 20, 0, 0, 0, 0, 1, 2, 0, 0] + source + destination
    }

    static func judged(_ packet: [UInt8]) -> Bool { packet.withUnsafeBytes { IPPacketInfo.isLinkScoped($0) } }

    static let global = v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1])
    static let tunnelAddress = v6([0xfd00, 0x99, 0, 0, 0, 0, 0, 2])

    @Test("IPv6: link-local source or destination, and ff01/ff02 multicast, are link-scoped")
    func ipv6LinkScope() {
        let linkLocal = Self.v6([0xfe80, 0, 0, 0, 0x1c2, 0x3ff, 0xfe04, 0x506])
        let febf = Self.v6([0xfebf, 0, 0, 0, 0, 0, 0, 1])
        let fec0 = Self.v6([0xfec0, 0, 0, 0, 0, 0, 0, 1])
        let allRouters = Self.v6([0xff02, 0, 0, 0, 0, 0, 0, 2])
        let mldv2 = Self.v6([0xff02, 0, 0, 0, 0, 0, 0, 0x16])
        let interfaceLocal = Self.v6([0xff01, 0, 0, 0, 0, 0, 0, 1])
        let siteMulticast = Self.v6([0xff05, 0, 0, 0, 0, 0, 0, 2])
        let globalMulticast = Self.v6([0xff0e, 0, 0, 0, 0, 0, 0, 0x101])
        let unspecified = [UInt8](repeating: 0, count: 16)
        // Router solicitation and MLD report as the kernel sends them on a new interface.
        #expect(Self.judged(Self.ipv6(source: linkLocal, destination: allRouters)))
        #expect(Self.judged(Self.ipv6(source: unspecified, destination: mldv2)))
        #expect(Self.judged(Self.ipv6(source: Self.tunnelAddress, destination: linkLocal)))
        #expect(Self.judged(Self.ipv6(source: febf, destination: Self.global)), "fe80::/10 ends at febf")
        #expect(Self.judged(Self.ipv6(source: Self.tunnelAddress, destination: interfaceLocal)))
        // What the routes decide.
        #expect(!Self.judged(Self.ipv6(source: Self.tunnelAddress, destination: Self.global)))
        #expect(!Self.judged(Self.ipv6(source: fec0, destination: Self.global)), "fec0::/10 is not link-local")
        #expect(!Self.judged(Self.ipv6(source: Self.tunnelAddress, destination: siteMulticast)))
        #expect(!Self.judged(Self.ipv6(source: Self.tunnelAddress, destination: globalMulticast)))
    }

    @Test("IPv4: 169.254/16 at either end and 224.0.0/24 are link-scoped; other multicast is not")
    func ipv4LinkScope() {
        #expect(Self.judged(Self.ipv4(source: [169, 254, 7, 1], destination: [10, 20, 0, 5])))
        #expect(Self.judged(Self.ipv4(source: [10, 99, 0, 2], destination: [169, 254, 169, 254])))
        #expect(Self.judged(Self.ipv4(source: [10, 99, 0, 2], destination: [224, 0, 0, 251])), "mDNS")
        #expect(!Self.judged(Self.ipv4(source: [10, 99, 0, 2], destination: [224, 0, 1, 1])))
        #expect(!Self.judged(Self.ipv4(source: [10, 99, 0, 2], destination: [239, 1, 2, 3])))
        #expect(!Self.judged(Self.ipv4(source: [10, 99, 0, 2], destination: [10, 20, 0, 5])))
        #expect(!Self.judged(Self.ipv4(source: [169, 253, 0, 1], destination: [10, 20, 0, 5])))
    }

    @Test("short, truncated or non-IP bytes are not judged, and random bytes never crash")
    func boundsAndRandomInput() {
        #expect(!Self.judged([]))
        #expect(!Self.judged(Array(Self.ipv6(source: Self.v6([0xfe80, 0, 0, 0, 0, 0, 0, 1]), destination: Self.global).prefix(39))))
        #expect(!Self.judged([0x45] + [UInt8](repeating: 0, count: 10)))
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5000 {
            let bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = Self.judged(bytes)
        }
    }
}
