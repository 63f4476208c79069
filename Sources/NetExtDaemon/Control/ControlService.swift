import Foundation
import Logging
import NetExtCore
import NetExtIPC

/// Answers control requests: authorizes each against the caller's identity, applies it to the
/// store, the secret store and the sessions, and announces the changes.
public final class ControlService: Sendable {
    public static let daemonVersion = "0.1.0"

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

    public init(
        store: ConfigurationStore, secrets: SecretStore, sessions: SessionManager, registry: ProviderRegistry, hub: NotificationHub, logger: Logger,
        filters: FilterController? = nil, urlFilters: URLFilterController? = nil
    ) {
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
    /// and returns the encoded reply frame.
    public func reply(to envelope: RequestEnvelope, from identity: ClientIdentity) async -> [UInt8] {
        do {
            if envelope.request.modifiesState && !identity.mayModify {
                throw NetExtError.permissionDenied("\(envelope.request.method) needs root or membership of netextd's admin group (uid \(identity.uid) is neither)")
            }
            return try await handle(envelope, identity: identity)
        } catch {
            let mapped = (error as? NetExtError) ?? NetExtError(.configurationReadWriteFailed, "\(error)")
            if mapped.code != .configurationUnknown {
                logger.notice("request refused", metadata: ["method": "\(envelope.request.method)", "uid": "\(identity.uid)", "app": "\(identity.appIdentifier)", "error": "\(mapped.code.name)"])
            }
            return (try? ControlProtocol.framed(ErrorEnvelope(id: envelope.id, error: mapped))) ?? []
        }
    }

    private func handle(_ envelope: RequestEnvelope, identity: ClientIdentity) async throws -> [UInt8] {
        let id = envelope.id
        switch envelope.request {
        case .hello, .subscribe:
            throw NetExtError(.protocolError, "\(envelope.request.method) is handled by the connection")
        case .listConfigurations:
            let visible = try store.allConfigurations().filter(identity.canSee)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: ConfigurationList(configurations: visible)))
        case .loadConfiguration(let configurationID):
            let configuration = try visibleConfiguration(configurationID, identity: identity)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: ConfigurationResult(configuration: configuration)))
        case .saveConfiguration(let save):
            let saved = try await self.save(save, identity: identity)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: ConfigurationResult(configuration: saved)))
        case .removeConfiguration(let configurationID):
            let configuration = try visibleConfiguration(configurationID, identity: identity)
            let removed = try store.remove(id: configuration.id)
            removed.secretReferences.forEach(secrets.delete)
            logger.info("configuration removed", metadata: ["id": "\(removed.id)", "name": "\(removed.localizedDescription)"])
            await configurationChanged(removed, removed: true)
            hub.configurationChanged(removed, change: .removed)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: EmptyResult()))
        case .startConnection(let start):
            let configuration = try visibleConfiguration(start.id, identity: identity)
            var options = start.options
            let optionPassword = options.removeValue(forKey: "password")?.stringValue
            let password = try optionPassword ?? storedPassword(of: configuration)
            let info = try await sessions.start(configuration, options: options, password: password)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: info))
        case .stopConnection(let configurationID):
            var configuration = try visibleConfiguration(configurationID, identity: identity)
            if configuration.isOnDemandEnabled {
                // A person's explicit stop turns connect-on-demand off until it is turned on
                // again, as on Apple's systems; otherwise the rules would reconnect at once.
                configuration.isOnDemandEnabled = false
                let saved = try store.save(configuration).saved
                configuration = saved
                logger.notice("on-demand turned off by an explicit stop", metadata: ["configuration": "\(saved.localizedDescription)"])
                hub.configurationChanged(saved, change: .saved)
            }
            let info = await sessions.stop(configuration, reason: .userInitiated)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: info))
        case .getStatus(let configurationID):
            // Anyone may read status: every configuration's name and state, nothing more.
            var configurations = try store.allConfigurations()
            if let configurationID {
                configurations = configurations.filter { $0.id == configurationID }
                if configurations.isEmpty { throw NetExtError.unknown("no configuration with id \(configurationID)") }
            }
            var statuses: [StatusInfo] = []
            for configuration in configurations { statuses.append(await sessions.statusInfo(for: configuration)) }
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: StatusList(statuses: statuses)))
        case .installProfile(let install):
            let summary = try await installProfile(install.data, identity: identity)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: summary))
        case .removeProfile(let identifier):
            let removal = try await removeProfile(identifier, identity: identity)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: removal))
        case .listProfiles:
            let profiles = try store.profiles(installedBy: identity.isRoot ? nil : identity.owner)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: ProfileList(profiles: profiles)))
        case .listProviders:
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: registry.load()))
        case .sendProviderMessage(let message):
            let configuration: Configuration
            if identity.mayModify, let stored = try store.configuration(id: message.id), stored.kind == .contentFilter {
                // The content filter is the machine's, not one app's: any administrator may talk
                // to its control provider (`netext filter prompt`), whoever created it.
                configuration = stored
            } else {
                configuration = try visibleConfiguration(message.id, identity: identity)
            }
            guard message.data.count <= Self.maximumAppMessage else {
                throw NetExtError(.configurationInvalid, "the message is \(message.data.count) bytes; at most \(Self.maximumAppMessage) are accepted")
            }
            let reply: Data?
            if configuration.kind == .contentFilter, let filters {
                // A filter's app messages go to its control provider (the data provider is
                // sandboxed and talks to no one).
                reply = try await filters.sendControlMessage(message.data, to: configuration)
            } else {
                reply = try await sessions.sendProviderMessage(message.data, to: configuration)
            }
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: ProviderMessageReply(data: reply)))
        case .getFilterStatus:
            let status = await filters?.status() ?? FilterStatus(state: .off)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: status))
        case .getFilterLog(let limit):
            guard identity.mayModify else {
                throw NetExtError.permissionDenied("the filter log names other users' destinations; it needs root or membership of netextd's admin group")
            }
            let entries = await filters?.log(limit: min(max(limit, 0), 2_000)) ?? []
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: FilterLogResult(entries: entries)))
        case .urlFilterVerdict(let url):
            guard url.utf8.count <= 8192 else { throw NetExtError.invalid("the URL is longer than 8192 bytes") }
            let verdict = await urlFilters?.verdict(for: url) ?? URLFilterVerdictResult(verdict: .allow, effective: .allow)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: verdict))
        case .getURLFilterStatus:
            let status = await urlFilters?.status() ?? URLFilterStatus(state: .off)
            return try ControlProtocol.framed(ResultEnvelope(id: id, result: status))
        }
    }

    /// The largest app message netextd relays (the control protocol's frames are larger).
    static let maximumAppMessage = 256 * 1024

    /// A configuration the caller may see; others are reported as unknown, not as forbidden, so
    /// that apps cannot probe each other's configurations.
    func visibleConfiguration(_ id: UUID, identity: ClientIdentity) throws -> Configuration {
        guard let configuration = try store.configuration(id: id), identity.canSee(configuration) else {
            throw NetExtError.unknown("no configuration with id \(id)")
        }
        return configuration
    }

    private func storedPassword(of configuration: Configuration) throws -> String? {
        switch configuration.protocolConfiguration {
        case .tunnelProvider(let settings): try settings.passwordReference.flatMap(secrets.secret(for:))
        case .personalVPN(let settings): try settings.passwordReference.flatMap(secrets.secret(for:))
        default: nil
        }
    }
}
