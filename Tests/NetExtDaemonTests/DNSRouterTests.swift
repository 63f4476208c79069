import Foundation
import NetExtCore
import NetExtLinux
import Testing
@testable import NetExtDaemon

/// The resolver file and the DNS stub as tunnels come and go, over a resolver file in a temporary
/// directory and a stub on a loopback port (no root).
@Suite("DNS router: the resolver file and the stub as tunnels come and go")
final class DNSRouterTests {
    let directory: String
    let resolver: ResolverConfiguration
    static let original = "# the system's own\nnameserver 10.0.0.53\nsearch corp.example.test\n"

    init() throws {
        directory = NSTemporaryDirectory() + "netext-dnsrouter-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        resolver = ResolverConfiguration(path: directory + "/resolv.conf", backupPath: directory + "/resolv.conf.netext")
        try Self.original.write(toFile: resolver.path, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func router(stub: Bool = true) -> DNSRouter {
        DNSRouter(resolver: resolver, stubAddress: stub ? SocketAddress(address: [127, 0, 0, 1], port: 0) : nil, logger: .init(label: "test"))
    }

    var file: String { (try? String(contentsOfFile: resolver.path, encoding: .utf8)) ?? "" }
    var nameservers: [String] { ResolverFileText.values(of: "nameserver", in: file) }
    var backupExists: Bool { FileManager.default.fileExists(atPath: resolver.backupPath) }

    @Test("servers without match domains take the whole file; removing the tunnel restores the original")
    func fullDNS() throws {
        let router = router()
        let office = UUID()
        try router.apply(DNSSettings(servers: ["10.8.0.1", "10.8.0.2"], searchDomains: ["office.test"]), for: office, rank: 0)
        #expect(nameservers == ["10.8.0.1", "10.8.0.2"])
        #expect(ResolverFileText.values(of: "search", in: file) == ["office.test"])
        #expect(backupExists)
        #expect(!router.isStubRunning)
        router.remove(office)
        #expect(file == Self.original)
        #expect(!backupExists)
        #expect(router.tunnels.isEmpty)
    }

    @Test("when the holder goes, the file goes to the remaining tunnel of lowest rank, then back to the original")
    func succession() throws {
        let router = router()
        let (first, second, third) = (UUID(), UUID(), UUID())
        try router.apply(DNSSettings(servers: ["10.1.0.1"]), for: first, rank: 2)
        try router.apply(DNSSettings(servers: ["10.2.0.1"]), for: second, rank: 1)
        try router.apply(DNSSettings(servers: ["10.3.0.1"]), for: third, rank: 5)
        #expect(nameservers == ["10.3.0.1"], "the latest tunnel's servers are in force")
        router.remove(third)
        #expect(nameservers == ["10.2.0.1"], "rank 1 before rank 2")
        router.remove(second)
        #expect(nameservers == ["10.1.0.1"])
        router.remove(first)
        #expect(file == Self.original)
    }

    @Test("the personal VPN yields to a tunnel that holds the file, and takes it when that tunnel goes")
    func personalVPNYields() throws {
        let router = router()
        let (office, personal) = (UUID(), UUID())
        try router.apply(DNSSettings(servers: ["10.8.0.1"]), for: office, rank: 0)
        try router.apply(DNSSettings(servers: ["10.99.0.1"]), for: personal, rank: 63, yieldToOthers: true)
        #expect(nameservers == ["10.8.0.1"])
        #expect(router.tunnels[personal]?.changedResolver == false)
        router.remove(office)
        #expect(nameservers == ["10.99.0.1"])
        #expect(router.tunnels[personal]?.changedResolver == true)
        router.remove(personal)
        #expect(file == Self.original)
    }

    @Test("match domains: the stub routes them, the file points at the stub with both search lists; removal stops the stub")
    func matchDomains() throws {
        let router = router()
        let office = UUID()
        try router.apply(DNSSettings(servers: ["10.8.0.1"], searchDomains: ["office.test"], matchDomains: ["office.test"]), for: office, rank: 0)
        #expect(router.isStubRunning)
        #expect(nameservers == ["127.0.0.1"])
        #expect(ResolverFileText.values(of: "search", in: file) == ["corp.example.test", "office.test"])
        let routing = router.stubRouting
        #expect(routing.defaultServers == ["10.0.0.53"], "names outside the match domains go to the system's servers")
        #expect(routing.entries == [.init(owner: office.uuidString, matchDomains: ["office.test"], servers: ["10.8.0.1"])])
        #expect(routing.servers(for: "wiki.office.test").servers == ["10.8.0.1"])
        #expect(routing.servers(for: "example.org").servers == ["10.0.0.53"])
        router.remove(office)
        #expect(!router.isStubRunning)
        #expect(file == Self.original)
    }

    @Test("a routed tunnel keeps the stub in the file when a full-DNS tunnel goes; the full one gets it back after")
    func routedAndFull() throws {
        let router = router()
        let (full, routed) = (UUID(), UUID())
        try router.apply(DNSSettings(servers: ["10.1.0.1"]), for: full, rank: 0)
        try router.apply(DNSSettings(servers: ["10.2.0.1"], matchDomains: ["two.test"]), for: routed, rank: 1)
        #expect(nameservers == ["127.0.0.1"])
        router.remove(routed)
        #expect(!router.isStubRunning)
        #expect(nameservers == ["10.1.0.1"], "the file never keeps the stub of a tunnel that is gone")
        router.remove(full)
        #expect(file == Self.original)
    }

    @Test("settings applied again without DNS undo what the tunnel's earlier settings wrote")
    func reappliedWithoutDNS() throws {
        let router = router()
        let office = UUID()
        try router.apply(DNSSettings(servers: ["10.8.0.1"]), for: office, rank: 0)
        try router.apply(nil, for: office, rank: 0)
        #expect(file == Self.original)
        try router.apply(DNSSettings(servers: ["10.8.0.1"], matchDomains: ["office.test"]), for: office, rank: 0)
        try router.apply(DNSSettings(servers: ["10.8.0.9"]), for: office, rank: 0)
        #expect(!router.isStubRunning, "from match domains to full DNS: the stub has nothing left to route")
        #expect(nameservers == ["10.8.0.9"])
        router.remove(office)
        #expect(file == Self.original)
    }

    @Test("on-demand's name watching keeps the stub in the file after the last tunnel, until it stops")
    func watchingNames() throws {
        let router = router()
        let office = UUID()
        router.watchResolvedNames { _ in }
        #expect(router.isStubRunning)
        #expect(nameservers == ["127.0.0.1"])
        try router.apply(DNSSettings(servers: ["10.8.0.1"], matchDomains: ["office.test"]), for: office, rank: 0)
        router.remove(office)
        #expect(router.isStubRunning)
        #expect(nameservers == ["127.0.0.1"])
        router.watchResolvedNames(nil)
        #expect(!router.isStubRunning)
        #expect(file == Self.original)
    }

    @Test("match domains without a stub address: refused with the setting named, and nothing left behind")
    func noStubAddress() throws {
        let router = router(stub: false)
        let office = UUID()
        #expect {
            try router.apply(DNSSettings(servers: ["10.8.0.1"], matchDomains: ["office.test"]), for: office, rank: 0)
        } throws: { error in
            (error as? NetExtError)?.message.contains("NETEXT_DNS_STUB") == true
        }
        router.remove(office)
        #expect(file == Self.original)
        #expect(!backupExists)
    }
}
