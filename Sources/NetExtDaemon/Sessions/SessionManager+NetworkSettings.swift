import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

/// The session manager's part in a tunnel's network settings: the TUN interface and its slot,
/// the plan (routes, rules, addresses, MTU) applied off the actor through the `NetworkWorker`
/// and changed in place when settings come again, enforced routes, DNS, and the answer to the
/// provider. After every await the session is checked again (`isCurrent`): a session that
/// ended meanwhile gets nothing, and what was applied for it is undone.
extension SessionManager {
    /// Whether the provider that sent network settings is still the session's, and running.
    func isCurrent(_ id: UUID, generation: Int) -> Bool {
        guard let session = sessions[id] else { return false }
        return session.generation == generation && session.machine.status.isActive
    }

    func applyNetworkSettings(_ settings: PacketTunnelNetworkSettings?, provider: ProviderProcess, id: UUID, generation: Int) async {
        guard isCurrent(id, generation: generation), let session = sessions[id] else { return }
        do throws(NetExtError) {
            guard let settings else {
                dns.remove(id)
                if var tunnel = session.tunnel, let plan = tunnel.plan {
                    tunnel.plan = nil
                    sessions[id]?.tunnel = tunnel
                    await network.perform { $0.teardown(plan) }
                }
                try await provider.send(.networkSettingsApplied(interface: session.tunnel?.name ?? "", mtu: 0))
                return
            }
            if session.tunnel == nil {
                let opened = try await network.performThrowing { applier throws(NetExtError) in try applier.openTunnelInterface(pattern: "netext%d") }
                guard isCurrent(id, generation: generation), sessions[id]?.tunnel == nil else {
                    SocketPair.close(opened.fd)
                    return
                }
                // The slot is taken after the await: another session may have taken one meanwhile.
                guard let slot = (0..<Self.personalSlot).first(where: { !usedSlots.contains($0) }) else {
                    SocketPair.close(opened.fd)
                    throw NetExtError(.connectionFailed, "all \(Self.personalSlot) tunnel slots are in use")
                }
                usedSlots.insert(slot)
                sessions[id]?.tunnel = TunnelInterface(fd: opened.fd, name: opened.name, slot: slot)
            }
            guard let interface = sessions[id]?.tunnel else { return }
            var policy = NetworkPlan.RoutingPolicy()
            var enforceRoutes = false
            var wantsLocalNetworks = false
            if case .tunnelProvider(let protocolSettings) = session.configuration.protocolConfiguration {
                policy.includeAllNetworks = protocolSettings.includeAllNetworks
                wantsLocalNetworks = protocolSettings.includeAllNetworks && protocolSettings.excludeLocalNetworks
                enforceRoutes = protocolSettings.enforceRoutes
            }
            // Questions to the system (routes, MTU) are asked off this actor; the session may
            // end while they are answered, and then nothing more is done for it.
            let remote = settings.tunnelRemoteAddress, askLocalNetworks = wantsLocalNetworks
            let (localNetworks, underlyingMTU) = await network.perform { applier in
                (askLocalNetworks ? applier.localNetworks() : [], applier.underlyingMTU(toward: remote))
            }
            policy.appRouting = await appSteering.routing(for: id)
            guard isCurrent(id, generation: generation) else { return }
            policy.localNetworks = localNetworks
            let plan = try NetworkPlan.make(
                settings: settings, interface: interface.name, table: Self.firstTable + interface.slot,
                rulePriority: Self.firstTable + 4 * interface.slot, underlyingMTU: underlyingMTU, policy: policy)
            if enforceRoutes {
                try await killSwitch.enforce(routes: plan.includedRoutes, for: id)
                guard isCurrent(id, generation: generation) else { return }
            }
            // The plan in force is recorded only once applied; until then the session holds none,
            // so a stop meanwhile has nothing to undo, and the check after the await undoes it.
            // Settings applied again change only what differs: routes both plans share stay.
            let previous = sessions[id]?.tunnel?.plan
            sessions[id]?.tunnel?.plan = nil
            do throws(NetExtError) {
                try await network.performThrowing { applier throws(NetExtError) in
                    if let previous { try applier.apply(plan, replacing: previous) } else { try applier.apply(plan) }
                }
            } catch {
                // The applier put the previous plan back: it is in force again, or undone if
                // the session ended meanwhile.
                if let previous {
                    if isCurrent(id, generation: generation), sessions[id]?.tunnel?.fd == interface.fd {
                        sessions[id]?.tunnel?.plan = previous
                    } else {
                        network.enqueue { $0.teardown(previous) }
                    }
                }
                throw error
            }
            guard isCurrent(id, generation: generation), var tunnel = sessions[id]?.tunnel, tunnel.fd == interface.fd else {
                network.enqueue { $0.teardown(plan) }
                return
            }
            tunnel.plan = plan
            tunnel.remoteAddress = settings.tunnelRemoteAddress.isEmpty ? nil : settings.tunnelRemoteAddress
            // Recorded now, before the DNS step that may throw: the applied plan must be in the
            // session, or a later teardown would not find it.
            sessions[id]?.tunnel = tunnel
            if case .include = policy.appRouting {
                // A per-app VPN's resolvers are its apps' alone: their queries are redirected
                // there; the machine's resolver file is left as it is.
                await appSteering.tunnelUp(id, interface: tunnel.name, addresses: plan.addresses, resolvers: settings.dnsSettings?.servers ?? [])
            } else {
                try dns.apply(settings.dnsSettings, for: id, rank: tunnel.slot, interface: tunnel.name)
                if policy.appRouting != nil { await appSteering.tunnelUp(id, interface: tunnel.name, addresses: plan.addresses, resolvers: []) }
            }
            logger.info("tunnel network settings applied", metadata: [
                "interface": "\(tunnel.name)", "mtu": "\(plan.mtu)", "addresses": "\(plan.addresses.map(\.description))",
                "routes": "\(plan.includedRoutes.map(\.description))", "table": "\(plan.table)",
            ])
            try provider.send(descriptor: tunnel.fd)
            try await provider.send(.networkSettingsApplied(interface: tunnel.name, mtu: plan.mtu))
        } catch {
            logger.warning("tunnel network settings refused", metadata: ["error": "\(error.message)"])
            try? await provider.send(.networkSettingsRefused(error))
        }
    }

    /// Undoes a session's network settings and closes its TUN interface.
    func removeTunnel(id: UUID) {
        guard let tunnel = sessions[id]?.tunnel else { return }
        if let plan = tunnel.plan { network.enqueue { $0.teardown(plan) } }
        dns.remove(id)
        let steering = appSteering
        Task { await steering.tunnelDown(id, interface: tunnel.name) }
        SocketPair.close(tunnel.fd)
        usedSlots.remove(tunnel.slot)
        sessions[id]?.tunnel = nil
        logger.info("tunnel interface removed", metadata: ["interface": "\(tunnel.name)"])
    }
}
