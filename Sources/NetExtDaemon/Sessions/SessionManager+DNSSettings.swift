import Foundation
import Logging
import NetExtCore

/// The system DNS settings (`DNSSettingsProtocol`): the session manager owns the DNS router, so
/// it puts an enabled configuration in force and takes it out. One is in force at a time: the
/// one enabled last.
extension SessionManager {
    func dnsSettingsChanged(_ configuration: Configuration, removed: Bool) {
        guard case .dnsSettings(let settings) = configuration.protocolConfiguration else { return }
        let enabled = configuration.isEnabled && !removed
        if !enabled {
            if dnsSettingsAttempt?.id == configuration.id { dnsSettingsAttempt = nil }
            do throws(NetExtError) { try dns.applySettings(nil, for: configuration.id) } catch {}
            return
        }
        if let other = dnsSettingsAttempt, other.id != configuration.id {
            logger.notice("DNS settings replaced by the configuration enabled later", metadata: [
                "replaced": "\(LogText.quoted(other.name))", "inForce": "\(LogText.quoted(configuration.localizedDescription))",
            ])
        }
        dnsSettingsAttempt = (configuration.id, configuration.localizedDescription, nil)
        do throws(NetExtError) {
            try dns.applySettings(settings, for: configuration.id)
        } catch {
            dnsSettingsAttempt?.problem = error.message
            logger.error("cannot put the DNS settings in force", metadata: ["id": "\(configuration.id)", "error": "\(error.message)"])
        }
    }

    /// At start: puts the enabled DNS settings configuration in force (the last one listed, if
    /// several are enabled).
    public func restoreDNSSettings(_ configurations: [Configuration]) {
        let enabled = configurations.filter { configuration in
            if case .dnsSettings = configuration.protocolConfiguration { return configuration.isEnabled }
            return false
        }
        if let chosen = enabled.last { dnsSettingsChanged(chosen, removed: false) }
    }

    /// `netext dns status`.
    public func dnsSettingsStatus() -> DNSSettingsStatus {
        guard let attempt = dnsSettingsAttempt else { return DNSSettingsStatus(state: .off) }
        let counts = dns.stubCounters
        let counters = DNSSettingsStatus.Counters(
            bySettings: counts.forwardedBySettings, encryptedFailures: counts.encryptedFailures, cleartextFallbacks: counts.cleartextFallbacks,
            toTunnel: counts.forwardedToTunnel, toSystem: counts.forwardedToSystem, unanswered: counts.unanswered, malformed: counts.malformed)
        guard let inForce = dns.settings, inForce.id == attempt.id else {
            return DNSSettingsStatus(state: .failed, configurationID: attempt.id, name: attempt.name, problem: attempt.problem ?? "not in force", counters: counters)
        }
        let servers = inForce.upstreams.map { $0.upstreams.map(\.serverDescription) } ?? inForce.dns.servers
        return DNSSettingsStatus(
            state: .running, configurationID: attempt.id, name: attempt.name, transport: inForce.dns.transport, servers: servers,
            matchDomains: inForce.dns.matchDomains, stubInResolverFile: dns.resolverPointsAtStub, counters: counters)
    }
}
