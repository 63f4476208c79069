import Foundation
import Logging
import NetExtCore
import NetExtLinux

/// The kill switch (`includeAllNetworks`, with `excludeLocalNetworks`) and enforced routes
/// (`enforceRoutes`) of every enabled tunnel configuration, kept as one nftables table
/// (`TrafficGuard`, in NetExtCore, computes its ruleset; the `NetworkApplier` installs it).
///
/// A configuration's guard goes up before its provider runs and stays up whatever happens to the
/// provider, the tunnel or netextd, until the configuration is disabled or removed. Its own
/// actor, so that the sessions' actor only says what it wants; the rules are written off both
/// actors, on the `NetworkWorker`.
actor KillSwitch {
    private var members: [UUID: TrafficGuard.Member] = [:]
    /// Portal logins by user id, each with its end and the grant that made it (a newer grant for
    /// the same user outlives an older one's timer).
    private var portalLogins: [UInt32: (login: TrafficGuard.PortalLogin, ends: Date, grant: Int)] = [:]
    private var grants = 0
    private let network: NetworkWorker
    private let logger: Logger

    init(network: NetworkWorker, logger: Logger) {
        self.network = network
        self.logger = logger
    }

    /// Whether any configuration's guard is in force.
    var isInForce: Bool { !members.isEmpty }

    /// Whether `configuration` has a guard in force.
    func isEngaged(_ configuration: UUID) -> Bool { members[configuration] != nil }

    /// Puts a configuration's kill switch or enforced routes in force (nothing for one that asks
    /// for neither). `manifest` names the provider whose own packets (to its server) may leave
    /// outside the tunnel; a provider that cannot be found gets a user id no process has.
    /// `apps`: the mark and mode of the configuration's apps when it routes by app.
    func engage(_ configuration: Configuration, manifest: ProviderManifest?, apps: FlowSteering.Marking? = nil) async throws(NetExtError) {
        guard configuration.isEnabled, case .tunnelProvider(let settings) = configuration.protocolConfiguration,
              settings.includeAllNetworks || settings.enforceRoutes else { return }
        // A proxy has no tunnel to hold traffic to: its `includeAllNetworks` is kept by its own
        // steering, which refuses its flows while the provider is gone (SessionManager+AppProxy).
        guard !settings.extensionPoint.takesFlows else { return }
        let uid: UInt32 = manifest.flatMap { manifest in getuid() == 0 ? UserDatabase.user(named: manifest.user)?.uid : getuid() } ?? UInt32.max - 1
        let localNetworks = settings.includeAllNetworks && settings.excludeLocalNetworks ? await network.perform { $0.localNetworks() } : []
        let previous = members[configuration.id]
        let member = TrafficGuard.Member(
            configuration: configuration.id, providerUID: uid, blocksAll: settings.includeAllNetworks,
            localNetworks: localNetworks, enforcedRoutes: previous?.enforcedRoutes ?? [], apps: apps)
        members[configuration.id] = member
        do throws(NetExtError) { try await applyWanted() } catch {
            members[configuration.id] = previous
            throw error
        }
        if previous == nil {
            logger.notice("traffic guard in force", metadata: [
                "configuration": "\(configuration.localizedDescription)", "includeAllNetworks": "\(settings.includeAllNetworks)",
                "excludeLocalNetworks": "\(settings.excludeLocalNetworks)", "enforceRoutes": "\(settings.enforceRoutes)",
                "table": "inet \(TrafficGuard.tableName)",
            ])
        }
    }

    /// With `enforceRoutes`: the routes the tunnel now claims, which nothing may reach outside it.
    /// Nothing happens for a configuration without a guard.
    func enforce(routes: [IPPrefix], for configuration: UUID) async throws(NetExtError) {
        guard members[configuration] != nil else { return }
        members[configuration]?.enforcedRoutes = routes
        try await applyWanted()
    }

    /// Lifts a configuration's guard (it was disabled or removed).
    /// Returns once the guard without it is in force (`netext disable` answers after traffic
    /// flows again, not before).
    func release(_ configuration: UUID) async {
        guard members.removeValue(forKey: configuration) != nil else { return }
        do throws(NetExtError) { try await applyWanted() } catch {
            logger.error("cannot update the traffic guard", metadata: ["error": "\(error.message)"])
        }
        logger.notice("traffic guard lifted", metadata: ["configuration": "\(configuration)"])
    }

    /// At start: the guards of every enabled configuration that asks for one (fail closed from
    /// the moment netextd runs), replacing whatever an earlier netextd left.
    func restore(_ configurations: [Configuration], apps: [UUID: FlowSteering.Marking] = [:], manifest: @Sendable (Configuration) -> ProviderManifest?) async {
        members = [:]
        for configuration in configurations where configuration.isEnabled {
            do throws(NetExtError) { try await engage(configuration, manifest: manifest(configuration), apps: apps[configuration.id]) } catch {
                logger.error("cannot put the traffic guard in force", metadata: ["configuration": "\(configuration.localizedDescription)", "error": "\(error.message)"])
            }
        }
        // None asks for one: what an earlier netextd left is removed (an empty guard).
        if members.isEmpty { try? await applyWanted() }
    }

    /// Lets `uid`'s programs reach `interface` directly for `seconds` (a captive portal's login
    /// page, with the kill switch on), replacing any earlier grant for that user; the grant ends
    /// by itself. Returns whether a guard is in force (if none, nothing was blocked anyway).
    func allowPortalLogin(uid: UInt32, interface: String, seconds: Int) async throws(NetExtError) -> Bool {
        grants += 1
        let grant = grants
        let previous = portalLogins[uid]
        portalLogins[uid] = (TrafficGuard.PortalLogin(uid: uid, interface: interface), Date().addingTimeInterval(Double(seconds)), grant)
        do throws(NetExtError) { try await applyWanted() } catch {
            portalLogins[uid] = previous
            throw error
        }
        logger.notice("portal login allowed past the traffic guard", metadata: ["uid": "\(uid)", "interface": "\(interface)", "seconds": "\(seconds)"])
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(seconds))
            await self?.endPortalLogin(uid: uid, grant: grant)
        }
        return !members.isEmpty
    }

    /// Ends `uid`'s portal login (all of its grants when `grant` is nil); whether one was in force.
    @discardableResult
    func endPortalLogin(uid: UInt32, grant: Int? = nil) async -> Bool {
        guard let current = portalLogins[uid], grant == nil || current.grant == grant else { return false }
        portalLogins.removeValue(forKey: uid)
        do throws(NetExtError) { try await applyWanted() } catch {
            logger.error("cannot update the traffic guard", metadata: ["error": "\(error.message)"])
        }
        logger.notice("portal login ended", metadata: ["uid": "\(uid)", "interface": "\(current.login.interface)", "how": "\(grant == nil ? "ended" : "expired")"])
        return true
    }

    private func applyWanted() async throws(NetExtError) {
        let wanted = TrafficGuard(members: Array(members.values), portalLogins: portalLogins.values.map(\.login))
        try await network.performThrowing { applier throws(NetExtError) in try applier.applyGuard(wanted) }
    }
}
