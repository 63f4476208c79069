import EncryptedDNS
import Foundation
import NetExtCore

/// Per-app relays' DNS-over-HTTPS server (``AppRelayResolver``): a resolver of their own that
/// the steering sends the bound apps' DNS to. Nothing of the machine's resolver changes; the
/// names the relays do not take follow it (``machineNameservers``).
extension DNSRouter {
    /// Starts per-app relays' resolver for configuration `id` (replacing one it had): the names
    /// within `matchDomains` (every name without any), but those within `excludedDomains`, go
    /// over `upstreams`, the rest to the machine's resolver. Returns where it listens.
    func openAppRelayResolver(
        _ upstreams: EncryptedDNSServerSet, matchDomains: [String], excludedDomains: [String], for id: UUID
    ) throws(NetExtError) -> FlowSteering.LoopbackResolver {
        closeAppRelayResolver(for: id)
        let resolver: AppRelayResolver
        do throws(NetExtError) {
            resolver = try AppRelayResolver(
                upstreams: upstreams, owner: Self.relayOwner(id), matchDomains: matchDomains, excludedDomains: excludedDomains,
                machineServers: machineNameservers, logger: logger)
        } catch {
            upstreams.shutdown()
            throw error
        }
        appRelayResolvers[id] = resolver
        logger.info("DNS: per-app relays' apps resolve through the relays' DNS-over-HTTPS server", metadata: [
            "configuration": "\(id)", "server": "\(upstreams.upstreams.map(\.serverDescription))", "resolver": "127.0.0.1:\(resolver.address.port)",
            "matchDomains": "\(matchDomains.isEmpty ? ["(every name)"] : matchDomains)", "excludedDomains": "\(excludedDomains)",
        ])
        return resolver.address
    }

    /// Stops configuration `id`'s per-app relays' resolver, if it has one.
    func closeAppRelayResolver(for id: UUID) {
        guard let resolver = appRelayResolvers.removeValue(forKey: id) else { return }
        resolver.stop()
        logger.info("DNS: per-app relays' resolver stopped", metadata: ["configuration": "\(id)"])
    }

    /// Where the machine's resolver sends names now: netextd's stub while the resolver file
    /// names it, the servers of a tunnel that holds the whole file, else the servers from
    /// before netextd changed anything.
    var machineNameservers: [String] {
        if resolverPointsAtStub, let stub { return [stub.address.hostText] }
        if let holder = tunnels.values.first(where: { $0.changedResolver && !$0.routed }), let servers = holder.fullDNS?.servers, !servers.isEmpty {
            return servers
        }
        return resolver?.originalNameservers(excluding: stubAddress?.hostText ?? "") ?? []
    }

    /// Tells the per-app relays' resolvers where the machine's resolver sends names now.
    func appRelayMachineServersChanged() {
        guard !appRelayResolvers.isEmpty else { return }
        let servers = machineNameservers
        for resolver in appRelayResolvers.values { resolver.machineServersChanged(servers) }
    }
}
