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
    private let network: NetworkWorker
    private let logger: Logger

    init(network: NetworkWorker, logger: Logger) {
        self.network = network
        self.logger = logger
    }

    /// Whether `configuration` has a guard in force.
    func isEngaged(_ configuration: UUID) -> Bool { members[configuration] != nil }

    /// Puts a configuration's kill switch or enforced routes in force (nothing for one that asks
    /// for neither). `manifest` names the provider whose own packets (to its server) may leave
    /// outside the tunnel; a provider that cannot be found gets a user id no process has.
    /// `apps`: the mark and mode of the configuration's apps when it routes by app.
    func engage(_ configuration: Configuration, manifest: ProviderManifest?, apps: FlowSteering.Marking? = nil) async throws(NetExtError) {
        guard configuration.isEnabled, case .tunnelProvider(let settings) = configuration.protocolConfiguration,
              settings.includeAllNetworks || settings.enforceRoutes else { return }
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

    private func applyWanted() async throws(NetExtError) {
        let wanted = TrafficGuard(members: Array(members.values))
        try await network.performThrowing { applier throws(NetExtError) in try applier.applyGuard(wanted) }
    }
}
