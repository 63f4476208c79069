import Foundation
import NetExt
import NetExtCore
import NetExtDaemon
import NetExtLinux
import NetExtTesting
import Synchronization
import Testing

/// A tunnel provider whose behaviour the configuration's providerConfiguration steers:
/// "routes" (IPv4 /16 networks, comma-separated), "dns" (a server), "matchDomain", "fail"
/// (startTunnel throws this message), "startDelay" (ms), "ignoreStop", "reapplyRoutes" (after
/// starting, the settings are applied again with these routes). Every packet the tunnel
/// interface brings is written back (an echo), so a test sees the TUN descriptor reached it.
final class ScriptedTunnel: TunnelProvider {
    func startTunnel(options: [String: JSONValue]?, context: ProviderContext) async throws {
        let script = context.providerConfiguration
        if let delay = script["startDelay"]?.numberValue { try await Task.sleep(for: .milliseconds(Int(delay))) }
        if let message = script["fail"]?.stringValue { throw NetExtError(.connectionFailed, message) }
        ignoreStop.withLock { $0 = script["ignoreStop"] != nil }
        try await context.setTunnelNetworkSettings(Self.settings(routes: script["routes"]?.stringValue ?? "10.20.0.0", script: script))
        if let flow = context.packetFlow {
            Task.detached {
                while let packets = try? await flow.readPackets(limit: 16), !packets.isEmpty {
                    try? flow.writePackets(packets)
                }
            }
        }
        if let handshakes = script["reportHandshakes"]?.numberValue {
            await context.reportTunnelStatistics(TunnelStatistics(endpoint: "192.0.2.1:51900", lastHandshake: Self.handshakeDate, handshakes: Int(handshakes)))
        }
        if let routes = script["reapplyRoutes"]?.stringValue {
            try await context.setTunnelNetworkSettings(Self.settings(routes: routes, script: script))
        }
    }

    static let handshakeDate = Date(timeIntervalSince1970: 1_790_000_000)

    static func settings(routes: String, script: [String: JSONValue]) -> PacketTunnelNetworkSettings {
        var dns: DNSSettings?
        if let server = script["dns"]?.stringValue {
            dns = DNSSettings(servers: [server], matchDomains: script["matchDomain"]?.stringValue.map { [$0] } ?? [])
        }
        return PacketTunnelNetworkSettings(
            tunnelRemoteAddress: "192.0.2.1",
            ipv4Settings: IPv4Settings(addresses: ["10.99.0.2"], subnetMasks: ["255.255.255.255"],
                includedRoutes: routes.split(separator: ",").map { IPv4Route(destinationAddress: String($0), subnetMask: "255.255.0.0") }),
            dnsSettings: dns, mtu: 1400)
    }

    func stopTunnel(reason: ProviderStopReason) async {
        if ignoreStop.withLock({ $0 }) { try? await Task.sleep(for: .seconds(3600)) }
    }

    func handleAppMessage(_ messageData: Data) async -> Data? {
        Data("echo: ".utf8) + messageData
    }

    let ignoreStop = Mutex(false)
}

/// netextd's session manager driving real providers in-process, over the recording applier and
/// a resolver file in a temporary directory: connect, settings, packets through the interface,
/// stop, failures, deadlines. No root, no processes, milliseconds.
@Suite("Session manager over fakes (in-process providers, recording applier)")
final class SessionManagerTests {
    static let bundle = "com.example.scripted"
    let directory: String
    let applier = RecordingNetworkApplier()
    let launcher = InProcessProviderLauncher([SessionManagerTests.bundle: .tunnel { ScriptedTunnel() }])
    let resolver: ResolverConfiguration
    let manager: SessionManager

    init() throws {
        directory = NSTemporaryDirectory() + "netext-sessions-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/providers", withIntermediateDirectories: true)
        // The registry checks the executable exists; the in-process launcher never runs it.
        for bundle in [Self.bundle, "com.example.absent"] {
            let manifest = #"{"bundleIdentifier": "\#(bundle)", "extensionPoint": "packet-tunnel", "executable": "/bin/true", "user": "nobody"}"#
            try manifest.write(toFile: directory + "/providers/\(bundle).json", atomically: true, encoding: .utf8)
        }
        resolver = ResolverConfiguration(path: directory + "/resolv.conf", backupPath: directory + "/resolv.conf.netext")
        try "nameserver 10.0.0.53\n".write(toFile: resolver.path, atomically: true, encoding: .utf8)
        manager = Self.makeManager(directory: directory, applier: applier, resolver: resolver, launcher: launcher, startDeadline: Self.generousDeadline)
    }

    /// The start deadline of every test but the one about it: CI's first minute can starve the
    /// task pool for a minute, and a connect must not fail for that.
    static let generousDeadline: Duration = .seconds(120)

    static func makeManager(
        directory: String, applier: RecordingNetworkApplier, resolver: ResolverConfiguration, launcher: InProcessProviderLauncher, startDeadline: Duration
    ) -> SessionManager {
        SessionManager(
            registry: ProviderRegistry(directory: directory + "/providers"), hub: NotificationHub(), logger: .init(label: "test"),
            applier: applier, resolver: resolver, dnsStubAddress: SocketAddress(address: [127, 0, 0, 1], port: 0),
            startDeadline: startDeadline, stopDeadline: .milliseconds(300), launcher: launcher)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func configuration(_ script: [String: JSONValue] = [:], bundle: String = SessionManagerTests.bundle, includeAllNetworks: Bool = false) -> NetExtCore.Configuration {
        NetExtCore.Configuration(
            owner: Owner(uid: 0, appIdentifier: "app.a"), localizedDescription: "Office", isEnabled: true,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: bundle, serverAddress: "vpn.example.test", providerConfiguration: script,
                includeAllNetworks: includeAllNetworks)))
    }

    var resolverFile: String { (try? String(contentsOfFile: resolver.path, encoding: .utf8)) ?? "" }

    @Test("start: connected, the plan applied, DNS in the resolver file, packets cross the interface; stop undoes it all")
    func connectAndStop() async throws {
        let office = configuration(["routes": .string("10.20.0.0,10.21.0.0"), "dns": .string("10.8.0.1")])
        let started = try await manager.start(office, options: [:], password: nil)
        #expect(started.status == .connected)
        let plan = try #require(applier.activePlans.first)
        #expect(plan.includedRoutes.map(\.description) == ["10.20.0.0/16", "10.21.0.0/16"])
        #expect(plan.mtu == 1400 && plan.interface == "faketun0")
        #expect(ResolverFileText.values(of: "nameserver", in: resolverFile) == ["10.8.0.1"])
        // Status in detail: what was applied, and the settings' remote address as the endpoint
        // (this provider reports no statistics).
        let details = try #require(started.tunnel)
        #expect(details == TunnelDetails(
            interface: "faketun0", mtu: 1400, addresses: ["10.99.0.2/32"], routes: ["10.20.0.0/16", "10.21.0.0/16"],
            dnsServers: ["10.8.0.1"], endpoint: "192.0.2.1"))

        // A packet written into the interface comes back: the provider got the descriptor.
        let end = try #require(applier.interfaceEnd(named: "faketun0"))
        let packet: [UInt8] = [0x45, 0, 0, 20] + [UInt8](repeating: 7, count: 16)
        try SocketPair.sendMessage(packet, over: end, wait: true)
        let echoed = try await receive(from: end)
        #expect(echoed == packet)

        let stopped = await manager.stop(office, reason: .userInitiated)
        #expect(stopped.status == .disconnected)
        #expect(stopped.lastDisconnectError == nil)
        await drain()
        #expect(applier.activePlans.isEmpty)
        #expect(resolverFile == "nameserver 10.0.0.53\n")
    }

    @Test("a provider's statistics report shows in status (endpoint, latest handshake, rekeys) and goes with the connection")
    func statisticsReport() async throws {
        let office = configuration(["reportHandshakes": .number(3), "dns": .string("10.8.0.1"), "matchDomain": .string("corp.example")])
        let started = try await manager.start(office, options: [:], password: nil)
        let details = try #require(started.tunnel)
        #expect(details.endpoint == "192.0.2.1:51900")
        #expect(details.lastHandshake == ScriptedTunnel.handshakeDate)
        #expect(details.rekeys == 2)
        #expect(details.matchDomains == ["corp.example"])
        let stopped = await manager.stop(office, reason: .userInitiated)
        #expect(stopped.tunnel == nil, "a stopped connection has no details")
        await drain()
    }

    @Test("a provider that fails to start: disconnected with its own error, nothing left applied")
    func failedStart() async throws {
        let status = try await manager.start(configuration(["fail": .string("the server refused the credentials")]), options: [:], password: nil)
        #expect(status.status == .disconnected)
        #expect(status.lastDisconnectError?.message == "the server refused the credentials")
        await drain()
        #expect(applier.activePlans.isEmpty)
    }

    @Test("a provider slower than the start deadline fails the start as timed out")
    func startDeadline() async throws {
        // The provider would take an hour: the 2 s deadline ends it, however late the pool runs.
        let status = try await Self.makeManager(directory: directory, applier: applier, resolver: resolver, launcher: launcher, startDeadline: .seconds(2)).start(configuration(["startDelay": .number(3_600_000)]), options: [:], password: nil)
        #expect(status.status == .disconnected)
        #expect(status.lastDisconnectError?.code == .timedOut)
    }

    @Test("a provider that ignores stop is ended after the stop deadline, and the stop completes")
    func ignoredStop() async throws {
        let office = configuration(["ignoreStop": .bool(true)])
        #expect(try await manager.start(office, options: [:], password: nil).status == .connected)
        let began = ContinuousClock.now
        let stopped = await manager.stop(office, reason: .userInitiated)
        #expect(stopped.status == .disconnected)
        // The provider would sleep an hour; the 300 ms stop deadline ends it (the bound allows
        // for a starved pool, and still tells "ended" from "waited for the provider").
        #expect(ContinuousClock.now - began < .seconds(90))
        await drain()
        #expect(applier.activePlans.isEmpty)
    }

    @Test("settings applied again while connected change the plan in place, not tear it down")
    func settingsAppliedAgain() async throws {
        let office = configuration(["routes": .string("10.20.0.0"), "reapplyRoutes": .string("10.20.0.0,10.22.0.0")])
        #expect(try await manager.start(office, options: [:], password: nil).status == .connected)
        let changed = applier.events.contains { if case .changed = $0 { true } else { false } }
        #expect(changed)
        #expect(!applier.events.contains { if case .tornDown = $0 { true } else { false } })
        #expect(applier.activePlans.first?.includedRoutes.map(\.description) == ["10.20.0.0/16", "10.22.0.0/16"])
        await manager.stop(office, reason: .userInitiated)
    }

    @Test("an app's message reaches the running provider and its answer comes back; a stopped one is refused")
    func appMessage() async throws {
        let office = configuration()
        _ = try await manager.start(office, options: [:], password: nil)
        let answer = try await manager.sendProviderMessage(Data("ping".utf8), to: office)
        #expect(answer == Data("echo: ping".utf8))
        await manager.stop(office, reason: .userInitiated)
        await #expect(throws: NetExtError.self) { try await self.manager.sendProviderMessage(Data("ping".utf8), to: office) }
    }

    @Test("a provider the launcher cannot start: the start fails naming it")
    func unknownProvider() async throws {
        let status = try await manager.start(configuration(bundle: "com.example.absent"), options: [:], password: nil)
        #expect(status.status == .disconnected)
        #expect(status.lastDisconnectError?.message.contains("com.example.absent") == true)
        #expect(launcher.launches.isEmpty)
    }

    @Test("a refused network plan: the provider's start fails with ip's refusal, nothing applied")
    func refusedPlan() async throws {
        applier.failApplies(containing: "rule")
        let status = try await manager.start(configuration(), options: [:], password: nil)
        #expect(status.status == .disconnected)
        #expect(status.lastDisconnectError?.message.contains("refused by the recording applier") == true)
        await drain()
        #expect(applier.activePlans.isEmpty)
    }

    @Test("kill switch: the guard is up before the provider runs, stays up when the provider fails, and goes with the configuration")
    func killSwitch() async throws {
        let office = configuration(["fail": .string("no route to the server")], includeAllNetworks: true)
        let status = try await manager.start(office, options: [:], password: nil)
        #expect(status.status == .disconnected)
        #expect(status.killSwitch == true)
        let guardEvents = applier.events.enumerated().filter { if case .guarded = $0.element { true } else { false } }
        let firstGuard = try #require(guardEvents.first)
        #expect(applier.events.prefix(firstGuard.offset).allSatisfy { if case .openedInterface = $0 { false } else { true } },
                "the guard was installed before anything of the tunnel")
        #expect(applier.currentGuard?.members.first?.blocksAll == true, "a failed provider leaves the guard closed")
        var disabled = office
        disabled.isEnabled = false
        await manager.configurationChanged(disabled, removed: false)
        for _ in 0..<100 where applier.currentGuard?.members.isEmpty != true { try await Task.sleep(for: .milliseconds(10)) }
        #expect(applier.currentGuard?.members.isEmpty == true, "disabling the configuration lifts it")
    }

    /// Reads one packet from the test's end of a fake interface, waiting at most 2 s.
    func receive(from end: Int32) async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var poller = pollfd(fd: end, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 2000) == 1 else {
                    continuation.resume(throwing: NetExtError(.timedOut, "no packet came back within 2 s"))
                    return
                }
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
                defer { buffer.deallocate() }
                continuation.resume(with: Result { try Array(buffer[..<SocketPair.receiveMessage(into: buffer, over: end)]) })
            }
        }
    }

    /// Waits until the network worker has run every queued teardown.
    func drain() async {
        // Teardowns are queued after the status is published; give the queue a moment.
        for _ in 0..<50 where !applier.activePlans.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
    }
}
