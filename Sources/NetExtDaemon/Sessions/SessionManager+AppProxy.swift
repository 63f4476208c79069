import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

/// The session manager's part in app and transparent proxies: once an app proxy's provider has
/// started (a transparent proxy's: once it set its network rules), netextd's transparent
/// listeners are opened and the flows steered to them (``FlowSteering/Mode/proxy``,
/// ``FlowSteering/TransparentProxy``); when the session ends, the steering goes first (new flows
/// go direct again) and the listeners after it.
extension SessionManager {
    func startProxying(_ id: UUID, provider: ProviderProcess, generation: Int) async throws(NetExtError) {
        guard isCurrent(id, generation: generation), let session = sessions[id], session.proxy == nil else { return }
        // An earlier run's steering and listeners go first — but a proxy failing closed keeps its
        // steering until the new listeners' replaces it, so that no flow slips by between.
        await proxyTeardowns.removeValue(forKey: id)?.value
        let isDNSProxy = provider.manifest.extensionPoint == .dnsProxy
        // A DNS proxy bound to apps (per-app) takes their DNS only, as an app proxy takes its
        // apps' flows; otherwise every program's.
        let boundToApps = isDNSProxy && session.configuration.tunnelProviderSettings?.isPerApp == true
        let dispatcher = try makeDispatcher(for: session, provider: provider, transparent: isDNSProxy)
        do {
            if isDNSProxy && !boundToApps {
                // A DNS proxy is a transparent proxy whose rules netextd sets: every program's DNS
                // but the provider's own.
                try await appSteering.transparentUp(
                    id, ports: dispatcher.ports, settings: TransparentProxyNetworkSettings.dnsProxy, exemptUIDs: [UserDatabase.user(named: provider.manifest.user)?.uid ?? 0])
            } else {
                // Per-app relays' apps resolve through the relays' DoH server.
                let resolver = startAppRelayResolver(session.configuration, dispatcher: dispatcher)
                try await appSteering.proxyUp(id, ports: dispatcher.ports, resolver: resolver) { apps in dispatcher.setApps(apps) }
            }
        } catch {
            endProxying(id)
            throw error
        }
        await retireHeldClosed(id)
        guard isCurrent(id, generation: generation) else {
            endProxying(id)
            return
        }
        let steered = boundToApps ? "DNS proxy: the bound apps' DNS flows go to the provider" : isDNSProxy ? "DNS proxy: every program's DNS flows go to the provider" : "app proxy: the apps' flows go to the provider"
        logger.info("\(steered)", metadata: [
            "configuration": "\(LogText.quoted(session.configuration.localizedDescription))",
            "listeners": "127.0.0.1:\(dispatcher.ports.tcp4)\(dispatcher.ports.tcp6.map { ", [::1]:\($0)" } ?? "")",
        ])
    }

    /// Opens a session's listeners and starts handing flows over.
    private func makeDispatcher(for session: Session, provider: ProviderProcess, transparent: Bool) throws(NetExtError) -> AppProxyFlowDispatcher {
        if proxyNames == nil {
            do { proxyNames = try ProxyDNSNames() } catch {
                logger.warning("app proxy: flows will carry addresses only, no host names", metadata: ["error": "\(error.message)"])
            }
        }
        let dispatcher = try AppProxyFlowDispatcher(
            channel: provider.flowChannel, configurationName: session.configuration.localizedDescription, names: proxyNames,
            sendsDeclinedFlowsOn: transparent, flowLimit: proxyFlowLimit, logger: logger)
        sessions[session.configuration.id]?.proxy = dispatcher
        dispatcher.start()
        return dispatcher
    }

    /// A transparent proxy's network rules: its listeners open (the first time), the matching
    /// flows of every program but the provider's own steered to them; nil takes them back.
    func applyTransparentProxySettings(_ settings: TransparentProxyNetworkSettings?, provider: ProviderProcess, id: UUID, generation: Int) async {
        guard isCurrent(id, generation: generation), let session = sessions[id] else { return }
        do throws(NetExtError) {
            guard provider.manifest.extensionPoint == .transparentProxy else {
                throw NetExtError(.configurationInvalid, "only a transparent proxy sets transparent proxy network settings")
            }
            guard let settings else {
                await appSteering.transparentDown(id)
                try await provider.send(.networkSettingsApplied(interface: "", mtu: 0))
                return
            }
            try settings.validate()
            let dispatcher: AppProxyFlowDispatcher
            if let running = session.proxy { dispatcher = running } else { dispatcher = try makeDispatcher(for: session, provider: provider, transparent: true) }
            // The provider's own connections are never taken (nor anything of root's, were the
            // manifest to run it as root: then the rules would take nothing of root's either).
            let exempt: [UInt32] = [UserDatabase.user(named: provider.manifest.user)?.uid ?? 0]
            try await appSteering.transparentUp(id, ports: dispatcher.ports, settings: settings, exemptUIDs: exempt)
            await retireHeldClosed(id)
            guard isCurrent(id, generation: generation) else {
                endProxying(id)
                return
            }
            startRelayResolver(session.configuration, dispatcher: dispatcher)
            logger.info("transparent proxy: its flows go to the provider", metadata: [
                "configuration": "\(LogText.quoted(session.configuration.localizedDescription))",
                "included": "\(settings.includedNetworkRules.map(\.description))", "excluded": "\(settings.excludedNetworkRules.map(\.description))",
            ])
            try await provider.send(.networkSettingsApplied(interface: "", mtu: 0))
        } catch {
            logger.warning("transparent proxy settings refused", metadata: ["error": "\(error.message)"])
            try? await provider.send(.networkSettingsRefused(error))
        }
    }

    /// A session's proxy ends: its steering goes (new flows go direct), then its listeners — or,
    /// while an enabled configuration has `includeAllNetworks`, both stay and every flow is
    /// refused (fail closed, as a VPN's kill switch holds traffic until `netext disable`); after
    /// a failure (not the user's stop) the next flow starts the provider again.
    func endProxying(_ id: UUID, failed: Bool = false) {
        guard let dispatcher = sessions[id]?.proxy else { return }
        sessions[id]?.proxy = nil
        if let configuration = sessions[id]?.configuration, configuration.isEnabled, Self.failsClosed(configuration) {
            // A relay's DNS server stays the route for its names: its queries fail (no
            // provider to carry them) rather than go to the machine's resolver.
            holdClosed(id, dispatcher, name: configuration.localizedDescription, restartOnFlow: failed)
            return
        }
        dns.removeRelayResolver(for: id)
        let steering = appSteering
        proxyTeardowns[id] = Task {
            await steering.proxyDown(id)
            await steering.transparentDown(id)
            await dispatcher.stop()
        }
        let counters = dispatcher.counters
        logger.info("app proxy ended", metadata: [
            "configuration": "\(id)", "offered": "\(counters.offered)", "handled": "\(counters.handled)",
            "declined": "\(counters.declined)", "lost": "\(counters.lost)", "sentDirect": "\(counters.sentDirect)", "directFailed": "\(counters.directFailed)",
            "udpOffered": "\(counters.udpOffered)", "datagramsDropped": "\(counters.datagramsDropped)",
            "live": "\(counters.live)", "overLimit": "\(counters.overLimit)",
            "dnsAnswersSeen": "\(proxyNames?.counters.answers ?? 0)", "dnsMalformed": "\(proxyNames?.counters.malformed ?? 0)",
        ])
    }
}

extension SessionManager {
    /// Whether a proxy's flows are refused while its provider is not running (the configuration's
    /// `includeAllNetworks`, as a VPN's kill switch), rather than sent direct.
    static func failsClosed(_ configuration: Configuration) -> Bool {
        guard case .tunnelProvider(let settings) = configuration.protocolConfiguration else { return false }
        return settings.includeAllNetworks && settings.extensionPoint.takesFlows
    }

    private func holdClosed(_ id: UUID, _ dispatcher: AppProxyFlowDispatcher, name: String, restartOnFlow: Bool) {
        heldClosed[id] = dispatcher
        dispatcher.refuseFlows { [weak self] in
            guard restartOnFlow else { return }
            Task { await self?.restartOnDemand(id) }
        }
        logger.warning("app proxy fails closed: its flows are refused while its provider is not running", metadata: [
            "configuration": "\(LogText.quoted(name))", "handled": "\(dispatcher.counters.handled)",
            "startsOnDemand": "\(restartOnFlow)",
        ])
    }

    /// A flow arrived while the proxy fails closed: its provider is started again (at most
    /// every 5 s; the flows meanwhile are refused, and the apps try again).
    func restartOnDemand(_ id: UUID) async {
        guard heldClosed[id] != nil, let session = sessions[id], !session.machine.status.isActive, let start = session.pendingStart else { return }
        let now = ContinuousClock.now
        if let last = onDemandRestarts[id], now - last < .seconds(5) { return }
        onDemandRestarts[id] = now
        logger.info("app proxy: a flow arrived while it fails closed; starting its provider again", metadata: [
            "configuration": "\(LogText.quoted(session.configuration.localizedDescription))",
        ])
        do { _ = try await self.start(session.configuration, options: start.options, password: start.password) } catch {
            logger.warning("app proxy: its provider could not be started again; its flows stay refused", metadata: ["error": "\(error.message)"])
        }
    }

    /// The new run's steering has replaced the held one's: its listeners close.
    func retireHeldClosed(_ id: UUID) async {
        guard let held = heldClosed.removeValue(forKey: id) else { return }
        onDemandRestarts[id] = nil
        await held.stop()
    }

    /// A proxy failing closed was disabled, removed or changed (or netextd stops): its steering
    /// goes, then its listeners.
    func releaseHeldClosed(_ id: UUID) async {
        guard let held = heldClosed.removeValue(forKey: id) else { return }
        onDemandRestarts[id] = nil
        dns.removeRelayResolver(for: id)
        await appSteering.proxyDown(id)
        await appSteering.transparentDown(id)
        await held.stop()
        logger.info("app proxy no longer fails closed: its flows go direct", metadata: ["configuration": "\(id)", "refused": "\(held.counters.refused)"])
    }

    /// Waits until an ended app proxy's steering and listeners are gone.
    func awaitProxyTeardown(_ id: UUID) async {
        await proxyTeardowns.removeValue(forKey: id)?.value
    }
}
