import EncryptedDNS
import Foundation
import NIOCore
import NIOPosix
import NetExtCore
import NetExtLinux
import Synchronization
import Testing
@testable import NetExtDaemon

/// An encrypted upstream that answers every query itself (one A record, 192.0.2.1, with an OPT
/// record as a padding server's answer has), or fails; it records what it was asked.
final class ScriptedUpstream: EncryptedDNSUpstream {
    let serverDescription: String
    let fails: Bool
    let asked = Mutex<[[UInt8]]>([])
    let eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    let shutDown = Mutex(false)

    init(_ description: String, fails: Bool = false) {
        serverDescription = description
        self.fails = fails
    }

    func exchange(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        asked.withLock { $0.append(query) }
        let loop = eventLoop
        if fails { return loop.makeFailedFuture(EncryptedDNSError.connectionClosed(server: serverDescription)) }
        var end = 12
        _ = try? DNSQuery.readName(query, at: &end)
        var answer = Array(query[..<(end + 4)])
        answer[2] = 0x81; answer[3] = 0x80
        answer[6] = 0; answer[7] = 1; answer[8] = 0; answer[9] = 0; answer[10] = 0; answer[11] = 1
        answer += [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]
        answer += [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 8, 0, 12, 0, 4, 0, 0, 0, 0]
        return loop.makeSucceededFuture(answer)
    }

    func shutdown() { shutDown.withLock { $0 = true } }
}

/// The system DNS settings through netextd's resolver: the resolver file, the stub's routing,
/// precedence with tunnels, and queries answered over the (scripted) encrypted upstreams.
@Suite("DNS router: system DNS settings (encrypted upstreams) beside tunnels")
final class DNSSettingsRoutingTests {
    let directory: String
    let resolver: ResolverConfiguration
    static let original = "nameserver 10.0.0.53\n"

    init() throws {
        directory = NSTemporaryDirectory() + "netext-dnssettings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        resolver = ResolverConfiguration(path: directory + "/resolv.conf", backupPath: directory + "/resolv.conf.netext")
        try Self.original.write(toFile: resolver.path, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    var nameservers: [String] { ResolverFileText.values(of: "nameserver", in: (try? String(contentsOfFile: resolver.path, encoding: .utf8)) ?? "") }

    func router(_ upstreams: [ScriptedUpstream]) -> DNSRouter {
        DNSRouter(resolver: resolver, stubAddress: SocketAddress(address: [127, 0, 0, 1], port: 0), logger: .init(label: "test")) { _ in upstreams.map { [$0] } }
    }

    static let tls = DNSSettingsProtocol(transport: .overTLS, servers: ["192.0.2.53", "192.0.2.54"], serverName: "dns.example.test")

    /// Asks the stub over UDP; nil when it does not answer within 3 s.
    func ask(_ router: DNSRouter, _ name: String, id: UInt16 = 0x5151) throws -> [UInt8]? {
        guard let stub = router.stubListeningAddress else { return nil }
        return try ask(at: stub, name, id: id)
    }

    /// Asks the resolver at `address` for `name`'s A record over UDP; nil when it does not
    /// answer within 3 s.
    func ask(at address: NetExtLinux.SocketAddress, _ name: String, id: UInt16) throws -> [UInt8]? {
        let socket = try UDPSocket(bindingTo: SocketAddress(address: [127, 0, 0, 1], port: 0))
        defer { socket.close() }
        var query: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in name.split(separator: ".") { query += [UInt8(label.utf8.count)] + Array(label.utf8) }
        query += [0, 0, 1, 0, 1]
        try query.withUnsafeBytes { try socket.send($0, to: address) }
        socket.setReceiveTimeout(milliseconds: 3000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        guard let received = try buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else { return nil }
        return Array(buffer[..<received.count])
    }

    @Test("settings for every name: the file points at the stub, queries go over the first upstream, the client's identifier and no OPT come back")
    func everyName() throws {
        let first = ScriptedUpstream("tls://dns.example.test@192.0.2.53:853")
        let router = router([first, ScriptedUpstream("second")])
        let id = UUID()
        try router.applySettings(Self.tls, for: id)
        #expect(router.isStubRunning)
        #expect(nameservers == ["127.0.0.1"])
        #expect(router.stubRouting.defaultOwner == DNSRouter.settingsOwner(id))
        #expect(router.resolverPointsAtStub)
        let answer = try #require(try ask(router, "www.example.org", id: 0x5151))
        #expect(answer[0] == 0x51 && answer[1] == 0x51)
        #expect(answer[11] == 0, "the OPT record the client did not send is gone")
        #expect(Array(answer.suffix(4)) == [192, 0, 2, 1])
        #expect(first.asked.withLock { $0.count } == 1)
        #expect(router.stubCounters.forwardedBySettings == 1)
        try router.applySettings(nil, for: id)
        #expect(!router.isStubRunning)
        #expect(first.shutDown.withLock { $0 }, "the upstreams are closed")
        #expect(nameservers == ["10.0.0.53"])
    }

    @Test("a tunnel's match domain wins over the settings' (also on a tie); other names go to the settings")
    func tunnelWins() throws {
        let router = router([ScriptedUpstream("encrypted")])
        let settings = UUID(), office = UUID()
        var split = Self.tls
        split.matchDomains = ["office.test", "example.org"]
        try router.applySettings(split, for: settings)
        try router.apply(DNSSettings(servers: ["10.8.0.1"], matchDomains: ["office.test"]), for: office, rank: 0)
        let routing = router.stubRouting
        #expect(routing.route(for: "wiki.office.test").owner == office.uuidString, "the tie goes to the tunnel")
        #expect(routing.route(for: "www.example.org").owner == DNSRouter.settingsOwner(settings))
        #expect(routing.route(for: "elsewhere.test").owner == nil, "outside every match domain: the former servers")
        router.remove(office)
        #expect(router.stubRouting.route(for: "wiki.office.test").owner == DNSRouter.settingsOwner(settings))
        #expect(router.isStubRunning, "the settings keep the stub")
    }

    @Test("a tunnel that takes every name takes the file from the settings, and gives it back when it goes")
    func fullTunnelTakesTheFile() throws {
        let router = router([ScriptedUpstream("encrypted")])
        let settings = UUID(), office = UUID()
        try router.applySettings(Self.tls, for: settings)
        try router.apply(DNSSettings(servers: ["10.8.0.1"]), for: office, rank: 0)
        #expect(nameservers == ["10.8.0.1"])
        #expect(!router.resolverPointsAtStub)
        router.remove(office)
        #expect(nameservers == ["127.0.0.1"], "back to the stub, not the original")
        try router.applySettings(nil, for: settings)
        #expect(nameservers == ["10.0.0.53"])
    }

    @Test("a relay's DoH server answers its match domains (after a tunnel's, before the settings'); a relay taking every name keeps them from the settings; taken out, the settings answer again and the stub stops when nothing needs it")
    func relayResolver() throws {
        let settingsServer = ScriptedUpstream("settings")
        let router = router([settingsServer])
        let relay = ScriptedUpstream("https://doh.office.test/dns-query through the relays")
        let relayID = UUID(), settings = UUID(), office = UUID()
        try router.applyRelayResolver(EncryptedDNSServerSet([relay]), matchDomains: ["office.test"], for: relayID)
        #expect(router.isStubRunning && nameservers == ["127.0.0.1"])
        var routing = router.stubRouting
        #expect(routing.route(for: "wiki.office.test").owner == DNSRouter.relayOwner(relayID))
        #expect(routing.route(for: "www.example.org").owner == nil, "other names: the machine's servers")
        let answer = try #require(try ask(router, "wiki.office.test", id: 0x7171))
        #expect(answer[0] == 0x71 && Array(answer.suffix(4)) == [192, 0, 2, 1])
        #expect(relay.asked.withLock { $0.count } == 1)

        var split = Self.tls
        split.matchDomains = ["office.test"]
        try router.applySettings(split, for: settings)
        try router.apply(DNSSettings(servers: ["10.8.0.1"], matchDomains: ["vpn.office.test"]), for: office, rank: 0)
        routing = router.stubRouting
        #expect(routing.route(for: "wiki.office.test").owner == DNSRouter.relayOwner(relayID), "the relay's domain before the settings' on a tie")
        #expect(routing.route(for: "git.vpn.office.test").owner == office.uuidString, "a tunnel's longer match wins")
        router.remove(office)

        // Every name: the relay's, though settings for every name come after it.
        try router.applySettings(Self.tls, for: settings)
        try router.applyRelayResolver(EncryptedDNSServerSet([relay]), matchDomains: [], for: relayID)
        #expect(router.stubRouting.defaultOwner == DNSRouter.relayOwner(relayID))
        try router.applySettings(Self.tls, for: UUID())
        #expect(router.stubRouting.defaultOwner == DNSRouter.relayOwner(relayID), "new settings do not take the relay's names")
        router.removeRelayResolver(for: relayID)
        #expect(router.stubRouting.defaultOwner?.hasPrefix(DNSRouter.settingsOwnerPrefix) == true, "the settings answer every name again")
        #expect(relay.shutDown.withLock { $0 })
        try router.applySettings(nil, for: router.settings!.id)
        #expect(!router.isStubRunning)
        #expect(nameservers == ["10.0.0.53"])
    }

    @Test("per-app relays' resolver: a port of its own; the relays' names over their DoH server, excluded ones and the rest to the machine's resolver as it changes; the machine's file untouched; stopped with the relays")
    func appRelayResolver() throws {
        let router = router([ScriptedUpstream("settings")])
        let relay = ScriptedUpstream("https://doh.office.test/dns-query through the relays")
        let id = UUID()
        let address = try router.openAppRelayResolver(
            EncryptedDNSServerSet([relay]), matchDomains: ["office.test"], excludedDomains: ["login.office.test"], for: id)
        #expect(address.port != 0)
        #expect(!router.isStubRunning && nameservers == ["10.0.0.53"], "the machine's resolver is left as it is")
        let answer = try #require(try ask(at: NetExtLinux.SocketAddress(address: [127, 0, 0, 1], port: address.port), "wiki.office.test", id: 0x6262))
        #expect(answer[0] == 0x62 && answer[1] == 0x62 && Array(answer.suffix(4)) == [192, 0, 2, 1])
        #expect(relay.asked.withLock { $0.count } == 1)
        var routing = try #require(router.appRelayResolvers[id]).routing
        #expect(routing.route(for: "wiki.office.test").owner == DNSRouter.relayOwner(id))
        #expect(routing.route(for: "sso.login.office.test").servers == ["10.0.0.53"], "an excluded name within a match domain goes to the machine's server")
        #expect(routing.route(for: "www.example.org").servers == ["10.0.0.53"] && routing.route(for: "www.example.org").owner == nil)

        // The machine's resolver becomes netextd's stub (system DNS settings): the other names follow it.
        let settings = UUID()
        try router.applySettings(Self.tls, for: settings)
        routing = try #require(router.appRelayResolvers[id]).routing
        #expect(routing.defaultServers == ["127.0.0.1"] && routing.route(for: "login.office.test").servers == ["127.0.0.1"])
        try router.applySettings(nil, for: settings)
        #expect(try #require(router.appRelayResolvers[id]).routing.defaultServers == ["10.0.0.53"])

        // Without match domains every name but the excluded goes over the relays' server.
        let all = AppRelayResolver.routing(owner: "r", matchDomains: [], excludedDomains: ["login.office.test"], machineServers: ["10.0.0.53"])
        #expect(all.route(for: "www.example.org").owner == "r" && all.route(for: "login.office.test").owner == AppRelayResolver.excludedOwner)

        router.removeRelayResolver(for: id)
        #expect(router.appRelayResolvers[id] == nil && relay.shutDown.withLock { $0 })
        #expect(((try? ask(at: NetExtLinux.SocketAddress(address: [127, 0, 0, 1], port: address.port), "wiki.office.test", id: 0x6363)) ?? nil) == nil, "the port is closed")
        #expect(nameservers == ["10.0.0.53"])
    }

    @Test("every upstream failing: SERVFAIL, nothing asked in the clear; the failure is counted")
    func failsClosed() throws {
        let dead = [ScriptedUpstream("a", fails: true), ScriptedUpstream("b", fails: true)]
        let router = router(dead)
        try router.applySettings(Self.tls, for: UUID())
        let answer = try #require(try ask(router, "www.example.org"))
        #expect(answer[3] & 0x0f == 2, "SERVFAIL")
        #expect(dead.allSatisfy { $0.asked.withLock { $0.count } == 1 }, "both servers were asked")
        #expect(router.stubCounters.encryptedFailures == 1)
        #expect(router.stubCounters.cleartextFallbacks == 0)
    }

    @Test("changed settings replace those in force without a gap: the same stub answers throughout, the file never goes back, no name goes in the clear")
    func replacementWithoutGap() throws {
        // The former servers are on loopback, so a query leaking to them stays on this machine.
        try "nameserver 127.0.0.9\n".write(toFile: resolver.path, atomically: true, encoding: .utf8)
        let router = router([ScriptedUpstream("encrypted")])
        let id = UUID()
        try router.applySettings(Self.tls, for: id)
        let address = try #require(router.stubListeningAddress)
        var unanswered = 0
        for round in 0..<20 {
            var changed = Self.tls
            changed.serverName = "dns\(round).example.test"
            try router.applySettings(changed, for: id)
            #expect(router.stubListeningAddress == address, "the stub kept running on its address")
            #expect(nameservers == ["127.0.0.1"], "the file still names the stub")
            if try ask(router, "www.example.org", id: UInt16(round)) == nil { unanswered += 1 }
        }
        #expect(unanswered == 0)
        #expect(router.stubCounters.forwardedToSystem == 0, "nothing asked the former servers")
        #expect(router.stubCounters.forwardedBySettings == 20)
        #expect(router.stubRouting.defaultOwner == DNSRouter.settingsOwner(id))
    }

    @Test("other settings replace those in force; disabling settings not in force changes nothing")
    func replacement() throws {
        let upstream = ScriptedUpstream("encrypted")
        let router = router([upstream])
        let first = UUID(), second = UUID()
        try router.applySettings(Self.tls, for: first)
        try router.applySettings(DNSSettingsProtocol(servers: ["192.0.2.99"]), for: second)
        #expect(router.settings?.id == second)
        #expect(upstream.shutDown.withLock { $0 }, "the first settings' upstreams closed")
        #expect(router.settings?.upstreams == nil, "cleartext settings have no upstreams")
        try router.applySettings(nil, for: first)
        #expect(router.settings?.id == second)
        #expect(nameservers == ["127.0.0.1"])
    }

    @Test("a burst from many clients at once: every query answered once, under its own identifier (replies sent many per system call); stopped, the port is free again")
    func burstFromManyClients() throws {
        let upstream = ScriptedUpstream("encrypted")
        let router = router([upstream])
        let id = UUID()
        try router.applySettings(Self.tls, for: id)
        let stub = try #require(router.stubListeningAddress)
        // 32 clients (32 source ports), each
        // sending 8 queries before reading any answer: new names first, then the same (cached).
        let clients = try (0..<32).map { _ in try UDPSocket(bindingTo: SocketAddress(address: [127, 0, 0, 1], port: 0)) }
        defer { clients.forEach { $0.close() } }
        for round in 0..<2 {
            for (index, client) in clients.enumerated() {
                for query in 0..<8 {
                    let message = DNSStubTests.query("n\(index)-\(query).burst.test", id: UInt16(index << 8 | query))
                    try message.withUnsafeBytes { try client.send($0, to: stub) }
                }
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            for (index, client) in clients.enumerated() {
                client.setReceiveTimeout(milliseconds: 3000)
                var ids = Set<UInt16>()
                for _ in 0..<8 {
                    let received = try #require(try buffer.withUnsafeMutableBytes { try client.receive(into: $0) }, "round \(round): client \(index) is missing answers")
                    #expect(received.from == stub, "answered from the stub's address")
                    #expect(Array(buffer[(received.count - 4)..<received.count]) == [192, 0, 2, 1])
                    ids.insert(UInt16(buffer[0]) << 8 | UInt16(buffer[1]))
                }
                #expect(ids == Set((0..<8).map { UInt16(index << 8 | $0) }), "round \(round): client \(index)'s identifiers")
            }
        }
        #expect(upstream.asked.withLock { $0.count } == 256, "the second round came from the cache")
        #expect(router.stubCounters.cacheHits == 256)
        try router.applySettings(nil, for: id)
        // Its channels close on their loops: the port is free within a moment.
        var free = false
        for _ in 0..<50 where !free {
            if let probe = try? UDPSocket(bindingTo: stub) {
                probe.close()
                free = true
            } else {
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        #expect(free, "every socket of the stopped stub is closed")
    }
}
