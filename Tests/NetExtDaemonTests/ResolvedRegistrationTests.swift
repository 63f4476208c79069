import Foundation
import NetExtCore
import NetExtLinux
import Synchronization
import Testing
@testable import NetExtDaemon

/// What netextd gives systemd-resolved: the names the stub claims as its routing changes, the
/// stub's link registration, and a tunnel's whole DNS on the tunnel's own link. The D-Bus calls
/// themselves are checked against a mock of resolved in scripts/e2e/dns-resolved.sh.
@Suite("systemd-resolved: what the stub's link and a tunnel's link are given")
struct ResolvedRegistrationTests {
    /// Records what the router asks of the machine's resolver.
    final class RecordingResolver: MachineResolver {
        enum Event: Equatable {
            case install(servers: [String], interface: String?)
            case prepare(String)
            case installStub(StubClaims)
            case claims(StubClaims)
            case stubStopped
            case restore
        }
        let events = Mutex<[Event]>([])
        func record(_ event: Event) { events.withLock { $0.append(event) } }
        var recorded: [Event] { events.withLock { $0 } }

        var summary: String { "a recording" }
        var stubDevice: String? { nil }
        func originalNameservers(excluding stub: String) -> [String] { [] }
        func install(_ dns: DNSSettings, interface: String?) throws(NetExtError) { record(.install(servers: dns.servers, interface: interface)) }
        func prepareStub(address: SocketAddress) throws(NetExtError) { record(.prepare(address.hostText)) }
        func installStub(nameserver: String, addingSearchDomains searchDomains: [String], claims: StubClaims) throws(NetExtError) { record(.installStub(claims)) }
        func stubClaimsChanged(_ claims: StubClaims) { record(.claims(claims)) }
        func stubStopped() { record(.stubStopped) }
        func restore() { record(.restore) }
    }

    @Test("the stub claims each match domain once, in order; every name only when a default owner answers the rest")
    func claimsFromRouting() {
        var routing = DNSRouting(entries: [
            .init(owner: "a", matchDomains: ["corp.example.test.", "Lab.Test"], servers: ["10.0.0.1"]),
            .init(owner: "b", matchDomains: ["lab.test", ""], servers: ["10.0.0.2"]),
        ])
        #expect(StubClaims(routing) == StubClaims(matchDomains: ["corp.example.test", "lab.test"], allNames: false))
        routing.defaultOwner = "dns-settings:x"
        #expect(StubClaims(routing).allNames)
        #expect(StubClaims(DNSRouting()) == StubClaims())
    }

    @Test("the stub's link: its address, ~domain per match domain, ~. and the default route only for every name, then search domains")
    func stubRegistration() {
        let some = ResolvedRegistration.Registration(stub: "169.254.53.53", claims: StubClaims(matchDomains: ["corp.test"]), searchDomains: ["office.test"])
        #expect(some.servers == ["169.254.53.53"])
        #expect(some.domains.map(\.description) == ["~corp.test", "office.test"])
        #expect(!some.defaultRoute)
        let all = ResolvedRegistration.Registration(stub: "169.254.53.53", claims: StubClaims(matchDomains: ["corp.test"], allNames: true), searchDomains: [])
        #expect(all.domains.map(\.description) == ["~corp.test", "~."])
        #expect(all.defaultRoute)
    }

    @Test("IP addresses travel as resolved's (family, bytes); anything else is refused")
    func addressBytes() {
        #expect(ResolvedManager.addressBytes("169.254.53.53")! == (2, [169, 254, 53, 53]))
        #expect(ResolvedManager.addressBytes("fd00::53")! == (10, [0xfd, 0] + [UInt8](repeating: 0, count: 13) + [0x53]))
        #expect(ResolvedManager.addressBytes("dns.lab.test") == nil)
        #expect(ResolvedManager.addressBytes("300.1.1.1") == nil)
    }

    @Test("the router keeps resolved's claims in step: a link made before the stub binds, claims grow and shrink with tunnels, the link let go with the stub; a tunnel's whole DNS goes on its own link")
    func routerFollowsClaims() throws {
        let machine = RecordingResolver()
        let router = DNSRouter(resolver: machine, stubAddress: SocketAddress(address: [127, 0, 0, 1], port: 0), logger: .init(label: "test"))
        let (office, lab, full) = (UUID(), UUID(), UUID())
        try router.apply(DNSSettings(servers: ["10.8.0.1"], matchDomains: ["office.test"]), for: office, rank: 0, interface: "netext0")
        try router.apply(DNSSettings(servers: ["10.9.0.1"], matchDomains: ["lab.test"]), for: lab, rank: 1, interface: "netext1")
        router.remove(office)
        router.remove(lab)
        #expect(machine.recorded == [
            .prepare("127.0.0.1"),
            .installStub(StubClaims(matchDomains: ["office.test"])),
            .installStub(StubClaims(matchDomains: ["office.test", "lab.test"])),
            .claims(StubClaims(matchDomains: ["lab.test"])),
            .claims(StubClaims()),
            .stubStopped,
            // Once as the stub stops, once as the last tunnel lets the file go: restoring is idempotent.
            .restore, .restore,
        ])
        machine.events.withLock { $0.removeAll() }
        try router.apply(DNSSettings(servers: ["10.7.0.1", "10.7.0.2"]), for: full, rank: 0, interface: "netext2")
        #expect(machine.recorded == [.install(servers: ["10.7.0.1", "10.7.0.2"], interface: "netext2")])
        #expect(!router.isStubRunning, "a tunnel's whole DNS needs no stub")
    }

    @Test("the links whose default route was taken: read from /sys/class/net without loopback, kept whole through a rename, the file removed when none is held, nothing read from a file that is not one")
    func defaultRouteHold() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("netext-hold-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (name, index) in [("lo", "1\n"), ("eth0", "2\n"), ("wlan0", "7\n"), ("broken", "x\n")] {
            try FileManager.default.createDirectory(atPath: "\(root)/net/\(name)", withIntermediateDirectories: true)
            try index.write(toFile: "\(root)/net/\(name)/ifindex", atomically: true, encoding: .utf8)
        }
        let links = DefaultRouteHold.Link.current(in: root + "/net")
        #expect(links == [.init(index: 2, name: "eth0"), .init(index: 7, name: "wlan0")])

        let file = root + "/hold.json"
        DefaultRouteHold(links: links).write(to: file)
        #expect(DefaultRouteHold(contentsOf: file) == DefaultRouteHold(links: links))
        #expect(!FileManager.default.fileExists(atPath: file + ".new"), "the temporary file is renamed over the kept one")
        DefaultRouteHold(links: [links[1]]).write(to: file)
        #expect(DefaultRouteHold(contentsOf: file)?.links == [links[1]])
        DefaultRouteHold().write(to: file)
        #expect(!FileManager.default.fileExists(atPath: file), "nothing held: no file")
        #expect(DefaultRouteHold(contentsOf: file) == nil)
        try "{\"links\": [{\"index\": \"two\"}]}".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(DefaultRouteHold(contentsOf: file) == nil)
    }
}
