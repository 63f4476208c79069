import FlowInspection
import Foundation
import NetExtCore
import Synchronization
import NetExtTesting
import Testing
@testable import NetExtDaemon

@Suite("Per-app steering in netextd, over a fake cgroup tree and the recording applier")
struct AppSteeringControllerTests {
    let applier = RecordingNetworkApplier()
    let cgroups = FakeAppCgroups()
    let worker: NetworkWorker
    let steering: AppSteeringController

    init() {
        worker = NetworkWorker(applier: applier)
        steering = AppSteeringController(host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"))
    }

    static func tunnel(_ name: String, perApp: Bool, apps: [String], enabled: Bool = true) throws -> NetExtCore.Configuration {
        let rules = try apps.map { try AppRule(matchSigningIdentifier: AppIdentifier($0)) }
        return NetExtCore.Configuration(
            owner: Owner(uid: 0, appIdentifier: "app.a"), localizedDescription: name, isEnabled: enabled,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(
                providerBundleIdentifier: "com.example.t", serverAddress: "vpn.example.test", perAppUUID: perApp ? "U" : nil,
                appRules: perApp ? rules : [], excludedAppRules: perApp ? [] : rules)))
    }

    /// Waits (bounded) until the recorded steering satisfies `condition`.
    func eventually(_ condition: (FlowSteering?) -> Bool) async -> Bool {
        for _ in 0..<200 {
            await worker.drain()
            if condition(applier.currentSteering) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    @Test("an enabled per-app VPN gets a mark and a set; a launched app's cgroup joins it before place returns; disabled, the table goes")
    func includeLifecycle() async throws {
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        await steering.update(office)
        #expect(await steering.routing(for: office.id) == .include(mark: FlowSteering.mark(slot: 0)))
        #expect(cgroups.isWatched)
        let placed = try await steering.place(pid: 4242, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/curl")
        #expect(placed.cgroup == "netext-apps-test/org.example.Office")
        #expect(placed.binding?.configuration.id == office.id)
        #expect(cgroups.processes(in: placed.cgroup) == [4242])
        await worker.drain()
        let member = try #require(applier.currentSteering?.members.first)
        #expect(member.cgroups.map(\.path) == ["netext-apps-test/org.example.Office"])
        #expect(member.mode == .include && member.interface.isEmpty)
        #expect(applier.currentSteering?.nftPathPrefix == "unified/")
        #expect(cgroups.socketMarks == ["netext-apps-test/org.example.Office": FlowSteering.mark(slot: 0)], "new sockets there are marked at creation")
        #expect(member.socketMarked == ["netext-apps-test/org.example.Office"], "the table knows it need not mark them")

        await steering.tunnelUp(office.id, interface: "netext0", addresses: [try IPPrefix("10.99.0.2/32")], resolvers: ["10.20.0.53"])
        await worker.drain()
        #expect(applier.currentSteering?.members.first?.dnsServers == ["10.20.0.53"])
        await steering.tunnelDown(office.id, interface: "netext7")
        await worker.drain()
        #expect(applier.currentSteering?.members.first?.interface == "netext0", "another interface's end leaves the current one alone")
        await steering.tunnelDown(office.id, interface: "netext0")
        await worker.drain()
        #expect(applier.currentSteering?.members.first?.interface == "" && applier.currentSteering?.members.first?.dnsServers == [])

        var disabled = office
        disabled.isEnabled = false
        await steering.update(disabled)
        await worker.drain()
        #expect(applier.currentSteering?.isActive == false)
        #expect(await steering.routing(for: office.id) == nil)
        #expect(cgroups.socketMarks.isEmpty, "disabled: the socket-creation mark is taken off")
    }

    @Test("a scope made after the binding is found through the watcher; one removed leaves the set")
    func scopesFromTheWatcher() async throws {
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Viewer"])
        await steering.update(office)
        cgroups.make("user.slice/user-1000.slice/app-flatpak-org.example.Viewer-77.scope")
        #expect(await eventually { $0?.members.first?.cgroups.map(\.path) == ["user.slice/user-1000.slice/app-flatpak-org.example.Viewer-77.scope"] })
        cgroups.make("user.slice/user-1000.slice/app-gnome-org.example.Other-1.scope")
        cgroups.remove("user.slice/user-1000.slice/app-flatpak-org.example.Viewer-77.scope")
        #expect(await eventually { $0?.members.first?.cgroups.isEmpty == true })
    }

    @Test("exclude mode: its own mark, resolvers outside the tunnel; each enabled tunnel a mark of its own")
    func excludeAndMarks() async throws {
        let full = try Self.tunnel("Full", perApp: false, apps: ["org.example.Direct"])
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        await steering.update(full, bypassResolvers: ["198.51.100.53"])
        await steering.update(office)
        #expect(await steering.routing(for: full.id) == .exclude(mark: FlowSteering.mark(slot: 0)))
        #expect(await steering.routing(for: office.id) == .include(mark: FlowSteering.mark(slot: 1)))
        await worker.drain()
        #expect(applier.currentSteering?.members.first { $0.configuration == full.id }?.dnsServers == ["198.51.100.53"])
        let plain = try Self.tunnel("Plain", perApp: false, apps: [])
        await steering.update(plain)
        #expect(await steering.routing(for: plain.id) == nil, "a tunnel without app rules routes by destination only")
        let statuses = await steering.statuses(isVisible: { _ in true }, isConnected: { $0 == office.id })
        #expect(statuses.map(\.app) == ["org.example.Direct", "org.example.Office"])
        #expect(statuses.map(\.isConnected) == [false, true])
    }

    @Test("matchPath: netext run of another program as the app is refused, naming both")
    func matchPath() async throws {
        var office = try Self.tunnel("Office", perApp: true, apps: [])
        guard case .tunnelProvider(var settings) = office.protocolConfiguration else { return }
        settings.appRules = [try AppRule(matchSigningIdentifier: AppIdentifier("org.example.Office"), matchPath: "/usr/bin/office")]
        office.protocolConfiguration = .tunnelProvider(settings)
        await steering.update(office)
        await #expect(throws: NetExtError.self) { _ = try await steering.place(pid: 1, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/curl") }
        do { _ = try await steering.place(pid: 1, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/curl") } catch {
            #expect(error.message.contains("/usr/bin/office") && error.message.contains("/usr/bin/curl"))
        }
        _ = try await steering.place(pid: 1, app: try AppIdentifier("org.example.Office"), executable: "/usr/bin/office")
    }

    @Test("nft refusing a vanished cgroup: scanned again and retried; a restart replaces what was left; shutdown removes the table and empty launch cgroups")
    func retryRestoreShutdown() async throws {
        let office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        applier.failSteering(times: 2)
        await steering.update(office)
        await worker.drain()
        #expect(applier.currentSteering?.isActive == true, "the third attempt is installed")
        _ = try await steering.place(pid: 7, app: try AppIdentifier("org.example.Office"), executable: nil)

        let restarted = AppSteeringController(host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"))
        await restarted.restore([office, try Self.tunnel("Off", perApp: true, apps: ["org.example.Off"], enabled: false)])
        await worker.drain()
        #expect(applier.currentSteering?.members.count == 1)
        #expect(applier.currentSteering?.members.first?.cgroups.map(\.path) == ["netext-apps-test/org.example.Office"])
        await restarted.restore([])
        await worker.drain()
        #expect(applier.currentSteering?.isActive == false, "nothing to steer: what an earlier netextd left is removed")

        cgroups.exit(pid: 7)
        await restarted.shutdown()
        #expect(!cgroups.scan().contains { $0.hasPrefix("netext-apps-test") })
        #expect(!cgroups.isWatched)
    }

    @Test("per-app on demand: a log group opened while the VPN is down, its packets reported as the configuration's flow, closed once connected or off")
    func onDemandTrigger() async throws {
        let opened = Mutex<[UInt16: @Sendable () -> Void]>([:])
        let closed = Mutex<[UInt16]>([])
        let opener: AppSteeringController.TriggerOpener = { group, onFlow in
            opened.withLock { $0[group] = onFlow }
            return { closed.withLock { $0.append(group) } }
        }
        let controller = AppSteeringController(host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"), openTrigger: opener)
        let seen = Mutex<[UUID]>([])
        await controller.setAppFlowHandler { id in seen.withLock { $0.append(id) } }
        var office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        await controller.update(office)
        #expect(opened.withLock { $0.isEmpty }, "on demand off: no log group")
        office.isOnDemandEnabled = true
        await controller.update(office)
        await worker.drain()
        let group = FlowSteering.onDemandLogGroup(mark: FlowSteering.mark(slot: 0))
        let flow = try #require(opened.withLock { $0[group] })
        #expect(applier.currentSteering?.members.first?.onDemandLogGroup == group)
        flow()
        for _ in 0..<100 where seen.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(seen.withLock { $0 } == [office.id])
        await controller.tunnelUp(office.id, interface: "netext0", addresses: [], resolvers: [])
        await worker.drain()
        #expect(closed.withLock { $0 } == [group])
        #expect(applier.currentSteering?.members.first?.onDemandLogGroup == nil)
    }

    @Test("without a cgroup v2 hierarchy, launching an app says why")
    func noHierarchy() async throws {
        let without = AppSteeringController(host: nil, hostProblem: "no cgroup v2 hierarchy is mounted", launchRoot: "x", network: worker, logger: .init(label: "test"))
        do {
            _ = try await without.place(pid: 1, app: try AppIdentifier("org.example.App"), executable: nil)
            Issue.record("placed without a hierarchy")
        } catch {
            #expect(error.message == "per-app routing needs cgroup v2: no cgroup v2 hierarchy is mounted")
        }
    }

    /// A DNS response (RFC 1035 §4.1) for `name` with one A record per address (TTL 120).
    static func answer(_ name: String, _ addresses: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [0x12, 0x34, 0x81, 0x80, 0, 1, 0, UInt8(addresses.count), 0, 0, 0, 0]
        for label in name.split(separator: ".") { bytes += [UInt8(label.utf8.count)] + Array(label.utf8) }
        bytes += [0, 0, 1, 0, 1]
        for address in addresses { bytes += [0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 120, 0, 4] + address }
        return bytes
    }

    @Test("matchDomains: the app's cgroups in the rule's own set, no socket mark; a resolver per rule while connected, with the tunnel's servers and mark; answers for its domains learned before they are relayed, others ignored; stopped when the tunnel goes")
    func domainLimitedApps() async throws {
        let opened = Mutex<[(request: AppSteeringController.DomainResolverRequest, answer: @Sendable ([UInt8]) -> Void)]>([])
        let stopped = Mutex(0)
        let steering = AppSteeringController(
            host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"),
            openResolver: { request, answer throws(NetExtError) in
                opened.withLock { $0.append((request, answer)) }
                return .init(address: .init(port: 40_000, hasIPv6: false)) { stopped.withLock { $0 += 1 } }
            })
        var office = try Self.tunnel("Office", perApp: true, apps: ["org.example.Office"])
        guard case .tunnelProvider(var settings) = office.protocolConfiguration else { return }
        settings.appRules.append(try AppRule(matchSigningIdentifier: AppIdentifier("org.example.Mail"), matchDomains: ["corp.example"]))
        office.protocolConfiguration = .tunnelProvider(settings)
        await steering.update(office, bypassResolvers: ["198.51.100.53"])
        _ = try await steering.place(pid: 7, app: try AppIdentifier("org.example.Mail"), executable: nil)
        _ = try await steering.place(pid: 8, app: try AppIdentifier("org.example.Office"), executable: nil)
        await worker.drain()
        var member = try #require(applier.currentSteering?.members.first)
        #expect(member.cgroups.map(\.path) == ["netext-apps-test/org.example.Office"])
        #expect(member.domainLimited == [.init(index: 0, cgroups: [.init(app: try AppIdentifier("org.example.Mail"), path: "netext-apps-test/org.example.Mail")])])
        #expect(cgroups.socketMarks == ["netext-apps-test/org.example.Office": FlowSteering.mark(slot: 0)], "only the unlimited app's sockets are marked at creation")
        #expect(opened.withLock { $0.isEmpty }, "no resolver while the tunnel is down")

        await steering.tunnelUp(office.id, interface: "netext0", addresses: [try IPPrefix("10.99.0.2/32")], resolvers: ["10.20.0.53"])
        await worker.drain()
        let request = try #require(opened.withLock { $0.first?.request })
        #expect(request == .init(domains: ["corp.example"], tunnelServers: ["10.20.0.53"], otherServers: ["198.51.100.53"], mark: FlowSteering.mark(slot: 0)))
        #expect(applier.currentSteering?.members.first?.domainLimited.first?.resolver?.port == 40_000)

        // The resolver's thread calls back and returns only once the address is in the table.
        let answer = try #require(opened.withLock { $0.first?.answer })
        await Task.detached { answer(Self.answer("intranet.corp.example", [[10, 20, 0, 5]])) }.value
        await worker.drain()  // under a loaded CI the applier's record lagged the callback's return
        member = try #require(applier.currentSteering?.members.first)
        #expect(member.domainLimited.first?.destinations.map(\.address) == [[10, 20, 0, 5]])
        #expect((member.domainLimited.first?.destinations.first?.secondsLeft ?? 0) > 60)
        let before = applier.events.count
        await Task.detached { answer(Self.answer("www.other.example", [[100, 64, 0, 80]])) }.value
        await Task.detached { answer([0, 1, 2]) }.value
        await worker.drain()
        #expect(applier.events.count == before, "an answer outside the domains, or malformed, changes nothing")
        let statuses = await steering.statuses(isVisible: { _ in true }, isConnected: { _ in true })
        #expect(statuses.first { $0.app == "org.example.Mail" }?.learnedDestinations == 1)
        #expect(statuses.first { $0.app == "org.example.Mail" }?.matchDomains == ["corp.example"])
        #expect(statuses.first { $0.app == "org.example.Office" }?.learnedDestinations == nil)

        await steering.tunnelDown(office.id, interface: "netext0")
        await worker.drain()
        #expect(stopped.withLock { $0 } == 1)
        member = try #require(applier.currentSteering?.members.first)
        #expect(member.domainLimited.first?.resolver == nil)
        #expect(member.domainLimited.first?.destinations.map(\.address) == [[10, 20, 0, 5]], "learned addresses outlive a reconnection")
        await steering.shutdown()
    }

    @Test("host rules: the DNS hold opens with the first proxy that has them and closes with the last; an answer for a covered name (or a name below a domain rule) joins the rule's set before the callback returns; others and other proxies' names change nothing")
    func transparentHostRules() async throws {
        let holds = Mutex<[@Sendable (FlowInspection.DNSAnswerAddresses) -> Void]>([])
        let closed = Mutex(0)
        let steering = AppSteeringController(
            host: cgroups, launchRoot: "netext-apps-test", network: worker, logger: .init(label: "test"),
            openDNSHold: { learn throws(NetExtError) in
                holds.withLock { $0.append(learn) }
                return { closed.withLock { $0 += 1 } }
            })
        let ports = FlowSteering.ProxyPorts(tcp4: 41_000, tcp6: 41_001)
        let byNetwork = TransparentProxyNetworkSettings(includedNetworkRules: [NetworkRule(destinationNetwork: try IPPrefix("0.0.0.0/0"), destinationPort: 443, protocol: .tcp)])
        let first = UUID(), second = UUID()
        try await steering.transparentUp(first, ports: ports, settings: byNetwork, exemptUIDs: [65534])
        #expect(holds.withLock { $0.isEmpty }, "no hold without host rules")

        let byHost = TransparentProxyNetworkSettings(
            includedNetworkRules: [
                NetworkRule(destinationHost: NetworkEndpoint(hostname: "Site.Test.", port: 8080), protocol: .tcp),
                NetworkRule(destinationHost: NetworkEndpoint(hostname: "intranet", port: 0), protocol: .any),
            ],
            excludedNetworkRules: [NetworkRule(destinationHost: NetworkEndpoint(hostname: "public.site.test", port: 0))])
        try await steering.transparentUp(second, ports: ports, settings: byHost, exemptUIDs: [65534])
        let learn = try #require(holds.withLock { $0.first })
        await Task.detached { learn(try! DNSAnswerAddresses(parsing: Self.answer("www.site.test", [[100, 64, 0, 80]]))) }.value
        await worker.drain()
        var proxy = try #require(applier.currentSteering?.transparentProxies.first { $0.configuration == second })
        #expect(proxy.includedHostDestinations[0]?.map(\.address) == [[100, 64, 0, 80]])
        #expect(proxy.includedHostDestinations[1] == nil)
        #expect(applier.currentSteering?.ruleset.contains("elements = { 100.64.0.80 timeout") == true)

        await Task.detached { learn(try! DNSAnswerAddresses(parsing: Self.answer("public.site.test", [[100, 64, 0, 81]]))) }.value
        await Task.detached { learn(try! DNSAnswerAddresses(parsing: Self.answer("intranet", [[10, 1, 0, 1]]))) }.value
        await worker.drain()
        proxy = try #require(applier.currentSteering?.transparentProxies.first { $0.configuration == second })
        #expect(proxy.excludedHostDestinations[0]?.map(\.address) == [[100, 64, 0, 81]], "an excluded host rule learns too")
        #expect(proxy.includedHostDestinations[0]?.map(\.address) == [[100, 64, 0, 80], [100, 64, 0, 81]], "public.site.test is also within site.test")
        #expect(proxy.includedHostDestinations[1]?.map(\.address) == [[10, 1, 0, 1]])

        let before = applier.events.count
        await Task.detached { learn(try! DNSAnswerAddresses(parsing: Self.answer("www.intranet", [[10, 1, 0, 2]]))) }.value
        await Task.detached { learn(try! DNSAnswerAddresses(parsing: Self.answer("othersite.test", [[10, 1, 0, 3]]))) }.value
        await Task.detached { learn(try! DNSAnswerAddresses(parsing: Self.answer("www.site.test", [[100, 64, 0, 80]]))) }.value
        await worker.drain()
        #expect(applier.events.count == before, "a single-label rule covers only that host; an answer already known changes nothing")

        await steering.transparentDown(second)
        #expect(closed.withLock { $0 } == 1, "the last proxy with host rules gone: the hold closes")
        await steering.transparentDown(first)
        await steering.shutdown()
    }

    @Test("host rules without a way to hold DNS answers are refused with a sentence, and steer nothing")
    func hostRulesNeedTheHold() async throws {
        let settings = TransparentProxyNetworkSettings(includedNetworkRules: [NetworkRule(destinationHost: NetworkEndpoint(hostname: "site.test", port: 443))])
        do {
            try await steering.transparentUp(UUID(), ports: .init(tcp4: 41_000, tcp6: nil), settings: settings, exemptUIDs: [])
            Issue.record("host rules accepted without a DNS hold")
        } catch { #expect(error.message.contains("cannot hold DNS answers")) }
        // The next change of the table carries only the proxy whose settings were taken.
        let other = UUID()
        try await steering.transparentUp(other, ports: .init(tcp4: 41_002, tcp6: nil), settings: .dnsProxy, exemptUIDs: [])
        await worker.drain()
        #expect(applier.currentSteering?.transparentProxies.map(\.configuration) == [other], "refused settings steer nothing")
        await steering.shutdown()
    }
}
