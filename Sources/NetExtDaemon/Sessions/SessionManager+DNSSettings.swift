import Foundation
import Logging
import NetExtCore

/// The system DNS settings (`DNSSettingsProtocol`): the session manager owns the DNS router, so
/// it puts an enabled configuration in force and takes it out. One is in force at a time: the
/// one enabled last. With `prohibitsOtherDNS`, the DNS guard refuses other programs' DNS while
/// it is in force; it stays through a crash of netextd (the next netextd decides again at
/// start) and goes at a graceful shutdown, when the resolver file is restored too. A
/// configuration with on-demand rules (Apple's `NEDNSSettingsManager.onDemandRules`) is in force
/// only while the rule that last matched said Connect (``dnsSettingsOnDemand(_:applies:)``).
extension SessionManager {
    func dnsSettingsChanged(_ configuration: Configuration, removed: Bool) async {
        guard case .dnsSettings(let settings) = configuration.protocolConfiguration else { return }
        let enabled = configuration.isEnabled && !removed
        if removed { dnsOnDemandApplies[configuration.id] = nil }
        if !enabled {
            guard dnsSettingsAttempt?.id == configuration.id else { return }
            dnsSettingsAttempt = nil
            dnsSettingsPaused = false
            do throws(NetExtError) { try dns.applySettings(nil, for: configuration.id) } catch {}
            await applyDNSGuard(active: false)
            return
        }
        if let other = dnsSettingsAttempt, other.id != configuration.id {
            logger.notice("DNS settings replaced by the configuration enabled later", metadata: [
                "replaced": "\(LogText.quoted(other.name))", "inForce": "\(LogText.quoted(configuration.localizedDescription))",
            ])
        }
        dnsSettingsAttempt = (configuration.id, configuration.localizedDescription, nil)
        dnsSettingsPaused = Self.hasOnDemandRules(configuration) && dnsOnDemandApplies[configuration.id] != true
        if dnsSettingsPaused {
            // Enabled, but its rules keep it out on this network: the machine resolves as before.
            do throws(NetExtError) { try dns.applySettings(nil, for: configuration.id) } catch {}
            await applyDNSGuard(active: false)
            return
        }
        do throws(NetExtError) {
            try dns.applySettings(settings, for: configuration.id)
        } catch {
            dnsSettingsAttempt?.problem = error.message
            logger.error("cannot put the DNS settings in force", metadata: ["id": "\(configuration.id)", "error": "\(error.message)"])
        }
        // The guard follows what is asked even when the settings failed: a machine told to
        // allow no other DNS gets none rather than a way around.
        await applyDNSGuard(active: settings.prohibitsOtherDNS)
    }

    /// The on-demand controller's decision for a DNS settings configuration with rules: Connect
    /// (`true`) puts it in force, Disconnect (`false`) takes it out; called again with the same
    /// decision, nothing changes.
    public func dnsSettingsOnDemand(_ configuration: Configuration, applies: Bool) async {
        guard case .dnsSettings = configuration.protocolConfiguration, dnsOnDemandApplies[configuration.id] != applies else { return }
        dnsOnDemandApplies[configuration.id] = applies
        logger.info(applies ? "DNS settings: the on-demand rules put them in force" : "DNS settings: the on-demand rules take them out of force", metadata: [
            "configuration": "\(LogText.quoted(configuration.localizedDescription))",
        ])
        await dnsSettingsChanged(configuration, removed: false)
    }

    static func hasOnDemandRules(_ configuration: Configuration) -> Bool {
        configuration.isOnDemandEnabled && !configuration.onDemandRules.isEmpty
    }

    /// At start: puts the enabled DNS settings configuration in force (the last one listed, if
    /// several are enabled), and removes a DNS guard a crashed netextd left when none asks for it.
    public func restoreDNSSettings(_ configurations: [Configuration]) async {
        let enabled = configurations.filter { configuration in
            if case .dnsSettings = configuration.protocolConfiguration { return configuration.isEnabled }
            return false
        }
        if let chosen = enabled.last {
            await dnsSettingsChanged(chosen, removed: false)
        } else {
            await applyDNSGuard(active: false)
        }
    }

    /// At a graceful shutdown: the settings go (the resolver file is restored) and so does the guard.
    func endDNSSettings() async {
        guard let attempt = dnsSettingsAttempt else { return }
        dnsSettingsAttempt = nil
        dnsSettingsPaused = false
        do throws(NetExtError) { try dns.applySettings(nil, for: attempt.id) } catch {}
        await applyDNSGuard(active: false)
    }

    private func applyDNSGuard(active: Bool) async {
        do throws(NetExtError) {
            try await network.performThrowing { applier throws(NetExtError) in try applier.applyDNSGuard(DNSGuard(isActive: active)) }
        } catch {
            dnsSettingsAttempt?.problem = error.message
            logger.error("cannot install the DNS guard", metadata: ["error": "\(error.message)"])
        }
    }

    /// `netext dns status`.
    public func dnsSettingsStatus() -> DNSSettingsStatus {
        guard let attempt = dnsSettingsAttempt else { return DNSSettingsStatus(state: .off) }
        let counts = dns.stubCounters
        if dnsSettingsPaused {
            return DNSSettingsStatus(state: .paused, configurationID: attempt.id, name: attempt.name, problem: "its on-demand rules keep it out of force on this network")
        }
        let counters = DNSSettingsStatus.Counters(
            bySettings: counts.forwardedBySettings, cacheHits: counts.cacheHits, encryptedFailures: counts.encryptedFailures, cleartextFallbacks: counts.cleartextFallbacks,
            toTunnel: counts.forwardedToTunnel, toSystem: counts.forwardedToSystem, unanswered: counts.unanswered, malformed: counts.malformed)
        guard let inForce = dns.settings, inForce.id == attempt.id, attempt.problem == nil else {
            return DNSSettingsStatus(state: .failed, configurationID: attempt.id, name: attempt.name, problem: attempt.problem ?? "not in force", counters: counters)
        }
        let servers = inForce.upstreams.map { $0.upstreams.map(\.serverDescription) } ?? inForce.dns.servers
        return DNSSettingsStatus(
            state: .running, configurationID: attempt.id, name: attempt.name, transport: inForce.dns.transport, servers: servers,
            matchDomains: inForce.dns.matchDomains, stubInResolverFile: dns.resolverPointsAtStub, prohibitsOtherDNS: inForce.dns.prohibitsOtherDNS,
            machineResolver: dns.resolver?.summary, counters: counters)
    }
}
