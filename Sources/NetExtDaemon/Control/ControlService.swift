import Dispatch
import Foundation
import Logging
import NetExtCore
import NetExtIPC

/// Answers control requests: authorizes each against the caller's identity, applies it to the
/// store, the secret store and the sessions, and announces the changes.
public final class ControlService: Sendable {
    public static let daemonVersion = NetExtVersion.current

    let store: ConfigurationStore
    let secrets: SecretStore
    let sessions: SessionManager
    let registry: ProviderRegistry
    let hub: NotificationHub
    let logger: Logger
    /// The content filter, when this netextd runs one.
    let filters: FilterController?
    /// The URL filter, when this netextd runs one.
    let urlFilters: URLFilterController?
    /// Captive portal detection (`detectCaptivePortal`) and its monitor (`getCaptivePortalStatus`).
    let captivePortals: CaptivePortalDetector
    let captivePortalMonitor: CaptivePortalMonitor
    /// The installed hotspot helpers, run when netextd monitors captive portals.
    let hotspotHelpers: HotspotHelperService?
    /// The machine's Wi-Fi service (`getHotspotList`), when netextd looks for one.
    let wifi: MachineWiFiService?

    public init(
        store: ConfigurationStore, secrets: SecretStore, sessions: SessionManager, registry: ProviderRegistry, hub: NotificationHub, logger: Logger,
        filters: FilterController? = nil, urlFilters: URLFilterController? = nil, connectivityCheck: ConnectivityProbe? = nil, captivePortalCAFile: String? = nil,
        captivePortalObserver: (any NetworkObserving)? = nil, captivePortalRecheck: Duration = .seconds(30),
        hotspotHelperStartDeadline: Duration = .seconds(10), hotspotTiming: HotspotHelperSession.Timing = .init(),
        wifi: MachineWiFiService? = nil
    ) {
        self.wifi = wifi
        let detector = CaptivePortalDetector(standardProbe: connectivityCheck, caFile: captivePortalCAFile)
        captivePortals = detector
        captivePortalMonitor = CaptivePortalMonitor(
            detector: detector, observer: captivePortalObserver, captiveRecheck: captivePortalRecheck,
            guardInForce: { [sessions] in await sessions.killSwitch.isInForce }, logger: logger)
        let helperManifests = registry.load().providers.filter { $0.extensionPoint == .hotspotHelper }
        hotspotHelpers = captivePortalObserver == nil || helperManifests.isEmpty ? nil : HotspotHelperService(
            manifests: helperManifests, supervisor: ProviderSupervisor(), killSwitch: sessions.killSwitch, logger: logger,
            startDeadline: hotspotHelperStartDeadline, timing: hotspotTiming, wifi: wifi)
        self.filters = filters
        self.urlFilters = urlFilters
        self.store = store
        self.secrets = secrets
        self.sessions = sessions
        self.registry = registry
        self.hub = hub
        self.logger = logger
    }

    /// Tells the parts that act on configurations that one was saved or removed.
    func configurationChanged(_ configuration: Configuration, removed: Bool) async {
        await sessions.configurationChanged(configuration, removed: removed)
        await filters?.configurationChanged(configuration, removed: removed)
        await urlFilters?.configurationChanged(configuration, removed: removed)
    }

    /// Handles one request (other than `hello` and `subscribe`, which the connection handles)
    /// and returns the encoded reply (a frame's payload).
    public func reply(to envelope: RequestEnvelope, from identity: ClientIdentity) async -> Data {
        let name = envelope.method.name
        let started = DispatchTime.now().uptimeNanoseconds
        var result = "ok"
        defer { hub.metrics.recordRequest(method: name, result: result, nanoseconds: DispatchTime.now().uptimeNanoseconds - started) }
        do {
            if envelope.modifiesState && !identity.mayModify {
                throw NetExtError.permissionDenied("\(name) needs root or membership of netextd's admin group (uid \(identity.uid) is neither)")
            }
            guard let handler = Self.dispatch.handler(for: name) else {
                throw NetExtError(.protocolError, "\(name) is handled by the connection")
            }
            return try await handler(self, envelope.method, identity, envelope.id)
        } catch {
            let mapped = (error as? NetExtError) ?? NetExtError(.configurationReadWriteFailed, "\(error)")
            result = mapped.code.name
            if mapped.code != .configurationUnknown {
                logger.notice("request refused", metadata: ["method": "\(name)", "uid": "\(identity.uid)", "app": "\(identity.appIdentifier)", "error": "\(mapped.code.name)"])
            }
            return (try? ControlProtocol.payload(ErrorEnvelope(id: envelope.id, error: mapped))) ?? Data()
        }
    }

    /// Every method but `hello` and `subscribe` (the connection's own), with its handler.
    static let dispatch: ControlDispatchTable<ControlService> = {
        var table = ControlDispatchTable<ControlService>()
        table.on(ListConfigurations.self) { service, _, identity in
            ConfigurationList(configurations: try service.store.allConfigurations().filter(identity.canSee))
        }
        table.on(LoadConfiguration.self) { service, method, identity in
            ConfigurationResult(configuration: try service.visibleConfiguration(method.configuration, identity: identity))
        }
        table.on(SaveConfiguration.self) { service, method, identity in
            try await service.save(method, identity: identity)
        }
        table.on(RemoveConfiguration.self) { service, method, identity in
            try await service.remove(method.configuration, identity: identity)
            return EmptyResult()
        }
        table.on(StartConnection.self) { service, method, identity in
            try await service.start(method, identity: identity)
        }
        table.on(StopConnection.self) { service, method, identity in
            try await service.stop(method.configuration, identity: identity)
        }
        table.on(GetStatus.self) { service, method, identity in
            try await service.statuses(of: method.configuration, identity: identity)
        }
        table.on(InstallProfile.self) { service, method, identity in
            try await service.installProfile(method.data, identity: identity)
        }
        table.on(RemoveProfile.self) { service, method, identity in
            try await service.removeProfile(method.identifier, identity: identity)
        }
        table.on(ListProfiles.self) { service, _, identity in
            ProfileList(profiles: try service.store.profiles(installedBy: identity.isRoot ? nil : identity.owner))
        }
        table.on(ListProviders.self) { service, _, _ in service.registry.load() }
        table.on(SendProviderMessage.self) { service, method, identity in
            try await service.sendProviderMessage(method, identity: identity)
        }
        table.on(GetFilterStatus.self) { service, _, _ in
            await service.filters?.status() ?? FilterStatus(state: .off)
        }
        table.on(GetFilterLog.self) { service, method, identity in
            guard identity.mayModify else {
                throw NetExtError.permissionDenied("the filter log names other users' destinations; it needs root or membership of netextd's admin group")
            }
            return FilterLogResult(entries: await service.filters?.log(limit: min(max(method.limit, 0), 2_000)) ?? [])
        }
        table.on(GetURLFilterVerdict.self) { service, method, _ in
            guard method.url.utf8.count <= 8192 else { throw NetExtError.invalid("the URL is longer than 8192 bytes") }
            return await service.urlFilters?.verdict(for: method.url) ?? URLFilterVerdictResult(verdict: .allow, effective: .allow)
        }
        table.on(GetURLFilterStatus.self) { service, _, _ in
            await service.urlFilters?.status() ?? URLFilterStatus(state: .off)
        }
        table.on(GetDNSSettingsStatus.self) { service, _, _ in
            await service.sessions.dnsSettingsStatus()
        }
        table.on(DetectCaptivePortal.self) { service, method, identity in
            try await service.detectCaptivePortal(method, identity: identity)
        }
        table.on(GetCaptivePortalStatus.self) { service, _, _ in
            var status = await service.captivePortalMonitor.status()
            status.helpers = await service.hotspotHelpers?.status()
            return status
        }
        table.on(OpenHotspotHelper.self) { service, method, _ in
            guard let helpers = service.hotspotHelpers else {
                throw NetExtError.invalid("no hotspot helper runs (netextd --captive-portal-detection and an installed hotspot-helper provider)")
            }
            return try await helpers.open(helper: method.helper)
        }
        table.on(GetHotspotList.self) { service, method, _ in
            await service.hotspotList(interface: method.interface)
        }
        table.on(AllowPortalLogin.self) { service, method, _ in
            try await service.allowPortalLogin(method)
        }
        table.on(PlaceInApp.self) { service, method, identity in
            try await service.placeInApp(method, identity: identity)
        }
        table.on(ListApps.self) { service, _, identity in
            AppList(apps: await service.sessions.appStatuses(isVisible: identity.canSee))
        }
        return table
    }()

    private func remove(_ reference: ConfigurationReference, identity: ClientIdentity) async throws {
        let configuration = try visibleConfiguration(reference, identity: identity)
        let removed = try store.remove(id: configuration.id)
        removed.secretReferences.forEach(secrets.delete)
        logger.info("configuration removed", metadata: ["id": "\(removed.id)", "name": "\(LogText.quoted(removed.localizedDescription))"])
        await configurationChanged(removed, removed: true)
        hub.configurationChanged(removed, change: .removed)
    }

    private func start(_ start: StartConnection, identity: ClientIdentity) async throws -> StatusInfo {
        let configuration = try visibleConfiguration(start.configuration, identity: identity)
        var options = start.options
        let optionPassword = options.removeValue(forKey: "password")?.stringValue
        let password = try optionPassword ?? storedPassword(of: configuration)
        return try await sessions.start(configuration, options: options, password: password)
    }

    private func stop(_ reference: ConfigurationReference, identity: ClientIdentity) async throws -> StatusInfo {
        var configuration = try visibleConfiguration(reference, identity: identity)
        if configuration.isOnDemandEnabled {
            // A person's explicit stop turns connect-on-demand off until it is turned on
            // again, as on Apple's systems; otherwise the rules would reconnect at once.
            configuration.isOnDemandEnabled = false
            let saved = try store.save(configuration).saved
            configuration = saved
            logger.notice("on-demand turned off by an explicit stop", metadata: ["configuration": "\(LogText.quoted(saved.localizedDescription))"])
            hub.configurationChanged(saved, change: .saved)
        }
        return await sessions.stop(configuration, reason: .userInitiated)
    }

    /// The status of the configurations the caller may see — the same ones `list` and `show`
    /// give it (its own; root: all) — so the three never disagree.
    private func statuses(of reference: ConfigurationReference?, identity: ClientIdentity) async throws -> StatusList {
        let configurations = try reference.map { [try visibleConfiguration($0, identity: identity)] } ?? store.allConfigurations().filter(identity.canSee)
        var statuses: [StatusInfo] = []
        for configuration in configurations { statuses.append(await sessions.statusInfo(for: configuration)) }
        return StatusList(statuses: statuses)
    }

    private func sendProviderMessage(_ message: SendProviderMessage, identity: ClientIdentity) async throws -> ProviderMessageReply {
        // The content filter is the machine's, not one app's: any administrator may talk to its
        // control provider (`netext filter prompt`), whoever created it.
        let configuration = try self.configuration(message.configuration) { identity.canSee($0) || (identity.mayModify && $0.kind == .contentFilter) }
        guard message.data.count <= Self.maximumAppMessage else {
            throw NetExtError(.configurationInvalid, "the message is \(message.data.count) bytes; at most \(Self.maximumAppMessage) are accepted")
        }
        if configuration.kind == .contentFilter, let filters = self.filters {
            // A filter's app messages go to its control provider (the data provider is
            // sandboxed and talks to no one).
            return ProviderMessageReply(data: try await filters.sendControlMessage(message.data, to: configuration))
        }
        return ProviderMessageReply(data: try await sessions.sendProviderMessage(message.data, to: configuration))
    }

    /// Moves the caller into its app's cgroup. Anyone may launch an app into a tunnel that
    /// carries it, or an app no tunnel names; leaving a tunnel (an app it excludes, which also
    /// passes its kill switch) is for root and the admin group only.
    private func placeInApp(_ method: PlaceInApp, identity: ClientIdentity) async throws -> AppPlacement {
        let app = try AppIdentifier(method.app)
        if let executable = method.executable, !executable.hasPrefix("/") || executable.utf8.count > 4096 {
            throw NetExtError.invalid("executable: '\(LogText.escaped(executable))' is not an absolute path")
        }
        if !identity.mayModify, let bound = await sessions.appSteering.binding(of: app)?.entry, bound.mode == .exclude {
            throw NetExtError.permissionDenied("\(app) bypasses \(bound.configuration.localizedDescription); launching it outside the tunnel needs root or membership of netextd's admin group (uid \(identity.uid) is neither)")
        }
        let placed = try await sessions.appSteering.place(pid: identity.credentials.pid, app: app, executable: method.executable)
        return AppPlacement(cgroup: placed.cgroup, configurationName: placed.binding?.configuration.localizedDescription, mode: placed.binding?.mode)
    }

    /// The largest app message netextd relays (the control protocol's frames are larger).
    static let maximumAppMessage = 256 * 1024

    /// A configuration the caller may see; others are reported as unknown, not as forbidden, so
    /// that apps cannot probe each other's configurations.
    func visibleConfiguration(_ reference: ConfigurationReference, identity: ClientIdentity) throws -> Configuration {
        try configuration(reference, where: identity.canSee)
    }

    /// The one configuration `reference` names among those `isIncluded` admits: an id is one
    /// store lookup; a name is compared without regard to case, and several with that name are
    /// refused, listing their ids.
    func configuration(_ reference: ConfigurationReference, where isIncluded: (Configuration) -> Bool) throws -> Configuration {
        switch reference {
        case .id(let id):
            guard let configuration = try store.configuration(id: id), isIncluded(configuration) else {
                throw NetExtError.unknown("no configuration with id \(id)")
            }
            return configuration
        case .name(let name):
            let matches = try store.allConfigurations().filter { isIncluded($0) && $0.isNamed(name) }
            switch matches.count {
            case 1: return matches[0]
            case 0: throw NetExtError.unknown("no configuration named '\(LogText.escaped(name))' (see `netext list`)")
            default:
                throw NetExtError.invalid("'\(LogText.escaped(name))' names \(matches.count) configurations; use one of their ids: \(matches.map(\.id.uuidString).joined(separator: ", "))")
            }
        }
    }

    private func storedPassword(of configuration: Configuration) throws -> String? {
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings): try settings.passwordReference.flatMap(secrets.secret(for:))
        case .personalVPN(let settings): try settings.passwordReference.flatMap(secrets.secret(for:))
        default: nil
        }
    }
}
