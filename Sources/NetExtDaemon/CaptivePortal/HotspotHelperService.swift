import Foundation
import Logging
import NetExtCore
import NetExtIPC
import NetExtLinux

/// netextd's hotspot helpers: every installed `hotspot-helper` provider runs as a process of
/// its own (restarted when it ends), and the network the captive portal monitor watches is
/// handed to them through a `HotspotHelperDriver`. A captive network is evaluated by every
/// helper, the most confident one authenticates — with the kill switch in force, past it: its
/// user is granted a portal login on that interface while it holds the network (authenticating,
/// presenting UI, maintaining: Apple's helpers' command connections pass likewise) — and
/// maintains the session; when the default route moves to another interface the chosen
/// helper logs off. Every Wi-Fi network the default route's interface joins is handed to them
/// too, captive or not, and leaving it logs the chosen helper off. An unclaimed or failed
/// network is offered again at the monitor's next check while it is still captive.
actor HotspotHelperService {
    /// A helper: its manifest and the process that runs it.
    private struct Helper {
        let manifest: ProviderManifest
        let keeper: FilterProviderKeeper
        /// Its user's ID (nil: unknown, or root, which is never granted a portal login).
        let uid: UInt32?
    }

    private var helpers: [String: Helper] = [:]
    private let order: [String]
    private let manifests: [ProviderManifest]
    private let supervisor: ProviderSupervisor
    private let killSwitch: KillSwitch
    private let logger: Logger
    private let startDeadline: Duration
    private let timing: HotspotHelperSession.Timing
    private var driver: HotspotHelperDriver?
    /// The interface of the network handed to the helpers.
    private var interface: String?
    /// The session's state before the change being handled.
    private var previousState: HotspotHelperSession.State?
    /// The user granted a portal login now, and on which interface.
    private var granted: (uid: UInt32, interface: String)?
    /// Renews the grant while the helper holds the network.
    private var renewal: Task<Void, Never>?
    /// Told when the chosen helper has logged in (on-demand's retry).
    private var loggedIn: (@Sendable () async -> Void)?
    /// Reads the monitor's detections.
    private var following: Task<Void, Never>?
    /// Reads the Wi-Fi association monitor's changes.
    private var followingAssociations: Task<Void, Never>?
    /// The Wi-Fi service: the SSID of a network handed over, and scan lists for `filterScanList`.
    private let wifi: MachineWiFiService?
    /// `filterScanList` commands awaiting their answer, by command ID (a range of their own,
    /// apart from the driver's).
    private var pendingScans: [UInt64: (helper: String, answer: CheckedContinuation<HotspotHelperResponse?, Never>)] = [:]
    private var nextScanID: UInt64 = 1 << 62
    /// How long a helper has to answer `filterScanList` (a person waits for the list).
    static let scanPatience: Duration = .seconds(3)

    init(
        manifests: [ProviderManifest], supervisor: ProviderSupervisor, killSwitch: KillSwitch, logger: Logger, startDeadline: Duration,
        timing: HotspotHelperSession.Timing = .init(), wifi: MachineWiFiService? = nil
    ) {
        self.wifi = wifi
        self.manifests = manifests.filter { $0.extensionPoint == .hotspotHelper }
        order = self.manifests.map(\.bundleIdentifier)
        self.supervisor = supervisor
        self.killSwitch = killSwitch
        self.logger = logger
        self.startDeadline = startDeadline
        self.timing = timing
    }

    /// Starts every helper and the driver.
    func start() async {
        guard driver == nil, !manifests.isEmpty else { return }
        driver = HotspotHelperDriver(
            helpers: order, timing: timing,
            send: { [weak self] command, helper in await self?.send(command, to: helper) ?? false },
            changed: { [weak self] state, network, chosen in await self?.changed(state, network: network, chosen: chosen) })
        for manifest in manifests {
            let bundle = manifest.bundleIdentifier
            let keeper = FilterProviderKeeper(
                role: .hotspotHelper, manifest: manifest, start: ProviderStart(configuration: Self.configuration(of: manifest), options: [:], password: nil),
                environment: [:], logger: logger, startDeadline: startDeadline, supervisor: supervisor,
                handle: { [weak self] message in await self?.received(message, from: bundle) },
                ended: { [weak self] in await self?.helperEnded(bundle) })
            let user = UserDatabase.user(named: manifest.user)
            helpers[bundle] = Helper(manifest: manifest, keeper: keeper, uid: user.flatMap { $0.uid == 0 ? nil : $0.uid })
            await keeper.launch()
        }
        logger.info("hotspot helpers started", metadata: ["helpers": "\(order.joined(separator: ","))"])
    }

    /// Hands each of `detections` (the captive portal monitor's, in order) to ``observed(_:)``,
    /// once every helper is ready or `readyWithin` has passed (a helper still starting would
    /// count as gone for the first network; the detections wait meanwhile).
    func follow(_ detections: AsyncStream<CaptivePortalDetection>, readyWithin: Duration = .seconds(10)) {
        following?.cancel()
        following = handing(detections, readyWithin: readyWithin) { service, detection in await service.observed(detection) }
    }

    /// A task that waits for the helpers (at most `readyWithin`), then hands each of `stream`'s
    /// elements to `handle`, in order, while this service lives.
    private func handing<Element: Sendable>(
        _ stream: AsyncStream<Element>, readyWithin: Duration, _ handle: @escaping @Sendable (HotspotHelperService, Element) async -> Void
    ) -> Task<Void, Never> {
        Task { [weak self] in
            await self?.waitForHelpers(within: readyWithin)
            for await element in stream {
                guard let self else { return }
                await handle(self, element)
            }
        }
    }

    private func waitForHelpers(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, !Task.isCancelled {
            var allReady = true
            for helper in helpers.values where !(await helper.keeper.isReady) { allReady = false }
            if allReady { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Logs off, stops every helper and ends any portal login granted.
    func stop() async {
        following?.cancel()
        following = nil
        followingAssociations?.cancel()
        followingAssociations = nil
        if interface != nil { await driver?.left() }
        await driver?.stop()
        driver = nil
        interface = nil
        for helper in helpers.values { await helper.keeper.stop(reason: .daemonShutdown) }
        helpers = [:]
        await endGrant()
    }

    /// Sets what is told when the chosen helper has logged in (the session moved to maintaining).
    func whenLoggedIn(_ body: @escaping @Sendable () async -> Void) {
        loggedIn = body
    }

    /// Hands each of `changes` (the Wi-Fi association monitor's) to ``associationChanged(_:)``,
    /// once every helper is ready or `readyWithin` has passed.
    func followAssociations(_ changes: AsyncStream<WiFiAssociationChange>, readyWithin: Duration = .seconds(10)) {
        followingAssociations?.cancel()
        followingAssociations = handing(changes, readyWithin: readyWithin) { service, change in await service.associationChanged(change) }
    }

    /// A Wi-Fi interface joined or left a network. Every network the default route's interface
    /// joins is handed to the helpers to evaluate, captive or not (as Apple's helpers are asked
    /// about each network the device joins); leaving it makes the chosen helper log off. A
    /// network joined on another interface is not handed over: netextd runs one helper session,
    /// for the network the captive portal monitor checks.
    func associationChanged(_ change: WiFiAssociationChange) async {
        guard let driver else { return }
        switch change {
        case .left(let left, _):
            guard left == interface else { return }
            await driver.left()
            interface = nil
        case .joined(let joined):
            guard await BlockingWork.run({ NetworkInterfaces.defaultRouteInterface() }) == joined.interface else {
                logger.info("Wi-Fi network joined off the default route: not handed to the hotspot helpers", metadata: [
                    "interface": "\(joined.interface)", "ssid": "\(joined.ssid)",
                ])
                return
            }
            if let interface {
                // The portal monitor may have handed this very network over already.
                if interface == joined.interface, await driver.network?.ssid == joined.ssid { return }
                await driver.left()
            }
            interface = joined.interface
            var network = HotspotNetwork(joined)
            network.didJustJoin = true
            await driver.joined(network)
        }
    }

    /// What the captive portal monitor found on the default route's interface.
    func observed(_ detection: CaptivePortalDetection) async {
        guard let driver else { return }
        if let interface, detection.interface != interface {
            await driver.left()
            self.interface = nil
        }
        guard detection.verdict == .captive else { return }
        if interface != nil {
            // Already handed over; offered again only when no helper took it or it failed.
            switch await driver.state {
            case .unclaimed, .failed: break
            default: return
            }
        }
        interface = detection.interface
        var network = HotspotNetwork(interface: detection.interface, didJustJoin: true)
        // On Wi-Fi the helpers see which network it is (Apple's helpers claim by SSID).
        if let wifi, let joined = await BlockingWork.run({ wifi.joined(interface: detection.interface) }) {
            network = HotspotNetwork(joined)
            network.didJustJoin = true
        }
        await driver.joined(network)
    }

    /// Asks every ready helper `filterScanList` with `scan` and returns their answers in the
    /// helpers' order (a helper silent for `scanPatience` is listed as silent).
    func filterScanList(_ scan: [HotspotNetwork]) async -> (answers: [(helper: String, response: HotspotHelperResponse)], silent: [String]) {
        var answers: [(helper: String, response: HotspotHelperResponse)] = []
        var silent: [String] = []
        for bundle in order {
            guard let helper = helpers[bundle], await helper.keeper.isReady else { continue }
            let id = nextScanID
            nextScanID += 1
            let response: HotspotHelperResponse? = await withCheckedContinuation { continuation in
                pendingScans[id] = (bundle, continuation)
                Task { [weak self] in
                    guard await self?.send(HotspotHelperCommand(id: id, kind: .filterScanList, networkList: scan), to: bundle) == true else {
                        await self?.resolveScan(id, with: nil)
                        return
                    }
                    try? await Task.sleep(for: Self.scanPatience)
                    await self?.resolveScan(id, with: nil)
                }
            }
            if let response { answers.append((bundle, response)) } else { silent.append(bundle) }
        }
        return (answers, silent)
    }

    private func resolveScan(_ id: UInt64, with response: HotspotHelperResponse?) {
        pendingScans.removeValue(forKey: id)?.answer.resume(returning: response)
    }

    /// A person opened `helper` (nil: the chosen one) after it answered `uiRequired`: it is sent
    /// `presentUI`. Throws unless the session waits for a person and `helper` is the chosen one.
    func open(helper: String?) async throws(NetExtError) -> HotspotHelperStatus {
        guard let driver else { throw NetExtError.invalid("no hotspot helper runs (netextd --captive-portal-detection and an installed hotspot-helper provider)") }
        let state = await driver.state
        guard state == .awaitingUser, let chosen = await driver.chosen else {
            throw NetExtError.invalid("the hotspot helper session is \(state), not waiting for a person to open its helper")
        }
        if let helper, helper != chosen {
            throw NetExtError.invalid("\(helper) is not the helper that asked for a person; \(chosen) did")
        }
        logger.notice("hotspot helper opened by a person", metadata: ["helper": "\(chosen)"])
        await driver.userOpened(chosen)
        return await status()
    }

    /// The helpers and the network's session, for `netext hotspot status`.
    func status() async -> HotspotHelperStatus {
        var states: [HotspotHelperStatus.Helper] = []
        for bundle in order {
            guard let helper = helpers[bundle] else { continue }
            states.append(HotspotHelperStatus.Helper(
                bundleIdentifier: bundle, user: helper.manifest.user, ready: await helper.keeper.isReady, restarts: await helper.keeper.restarts,
                lastError: await helper.keeper.lastError))
        }
        return HotspotHelperStatus(
            helpers: states, interface: interface, state: await driver?.state, chosen: await driver?.chosen)
    }

    // MARK: The driver's and the helpers' side

    private func send(_ command: HotspotHelperCommand, to helper: String) async -> Bool {
        guard let keeper = helpers[helper]?.keeper else { return false }
        return await keeper.send(.hotspotCommand(command))
    }

    private func received(_ message: ProviderMessage, from helper: String) async {
        guard case .hotspotResponse(let response) = message else { return }
        if let pending = pendingScans[response.commandID] {
            if pending.helper == helper { resolveScan(response.commandID, with: response) }
            return
        }
        if let network = response.network {
            // An evaluation's answer: which helpers claimed the network, and how surely.
            logger.info("hotspot helper claims the network", metadata: [
                "helper": "\(helper)", "confidence": "\(network.confidence)", "interface": "\(network.interface)", "ssid": "\(network.ssid)",
            ])
        }
        await driver?.answered(response, from: helper)
    }

    private func helperEnded(_ helper: String) async {
        await driver?.helperGone(helper)
    }

    private func changed(_ state: HotspotHelperSession.State, network: HotspotNetwork?, chosen: String?) async {
        defer { previousState = state }
        var metadata: Logger.Metadata = ["state": "\(state)", "interface": "\(network?.interface ?? interface ?? "-")"]
        if let chosen { metadata["helper"] = "\(chosen)" }
        if let ssid = network?.ssid, !ssid.isEmpty { metadata["ssid"] = "\(ssid)" }
        switch state {
        case .failed: logger.warning("hotspot helper: the network failed", metadata: metadata)
        default: logger.notice("hotspot helper", metadata: metadata)
        }
        switch state {
        case .authenticating, .presentingUI, .maintaining:
            if state == .maintaining, previousState != .maintaining, let loggedIn { Task { await loggedIn() } }
            guard let chosen, let uid = helpers[chosen]?.uid, let interface = network?.interface ?? interface else {
                if let chosen { logger.notice("the chosen hotspot helper runs as root or an unknown user: no portal login is granted past the kill switch", metadata: ["helper": "\(chosen)"]) }
                return
            }
            await grant(uid: uid, interface: interface)
        case .idle where granted != nil:
            // Left: the logoff just sent needs the network too; the grant ends once it is
            // answered (or after `logoffPatience`).
            await driver?.settle(within: Self.logoffPatience)
            await endGrant()
        default:
            await endGrant()
        }
    }

    /// Lets `uid`'s connections on `interface` past the kill switch while the helper holds the
    /// network: granted for `grantSeconds` and renewed at half of that until a state that does
    /// not need it ends it (a netextd that dies leaves a grant that ends by itself).
    private func grant(uid: UInt32, interface: String) async {
        guard await killSwitch.isInForce else { return }
        if let granted, granted.uid == uid, granted.interface == interface { return }
        await endGrant()
        do throws(NetExtError) {
            _ = try await killSwitch.allowPortalLogin(uid: uid, interface: interface, seconds: Self.grantSeconds)
            granted = (uid, interface)
        } catch {
            logger.error("cannot let the hotspot helper past the kill switch", metadata: ["uid": "\(uid)", "error": "\(error.message)"])
            return
        }
        renewal = Task { [weak self, killSwitch] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(Self.grantSeconds / 2))
                guard !Task.isCancelled, await self?.holds(uid: uid, interface: interface) == true else { return }
                _ = try? await killSwitch.allowPortalLogin(uid: uid, interface: interface, seconds: Self.grantSeconds)
            }
        }
    }

    private func holds(uid: UInt32, interface: String) -> Bool {
        granted?.uid == uid && granted?.interface == interface
    }

    private func endGrant() async {
        renewal?.cancel()
        renewal = nil
        guard let granted else { return }
        self.granted = nil
        await killSwitch.endPortalLogin(uid: granted.uid)
    }

    /// How long a helper's logoff may keep its grant (netextd's whole shutdown has 4.5 s).
    static let logoffPatience = 2.5

    /// How long a grant lasts before it is renewed (or ends by itself).
    static let grantSeconds = 600

    /// The configuration a helper's start carries: helpers have none of their own (Apple's
    /// register their handler with options only), so this names the helper and nothing else.
    static func configuration(of manifest: ProviderManifest) -> Configuration {
        Configuration(
            owner: Owner(uid: 0, appIdentifier: manifest.bundleIdentifier), localizedDescription: "hotspot helper \(manifest.bundleIdentifier)",
            isEnabled: true, onDemandRules: [],
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(providerBundleIdentifier: manifest.bundleIdentifier, serverAddress: "")),
            revision: 1)
    }
}
