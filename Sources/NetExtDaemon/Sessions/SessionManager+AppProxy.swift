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
        // An earlier run's steering and listeners go first.
        await proxyTeardowns.removeValue(forKey: id)?.value
        let dispatcher = try makeDispatcher(for: session, provider: provider, transparent: false)
        do {
            try await appSteering.proxyUp(id, ports: dispatcher.ports) { apps in dispatcher.setApps(apps) }
        } catch {
            endProxying(id)
            throw error
        }
        guard isCurrent(id, generation: generation) else {
            endProxying(id)
            return
        }
        logger.info("app proxy: the apps' flows go to the provider", metadata: [
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
            sendsDeclinedFlowsOn: transparent, logger: logger)
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
            guard isCurrent(id, generation: generation) else {
                endProxying(id)
                return
            }
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

    func endProxying(_ id: UUID) {
        guard let dispatcher = sessions[id]?.proxy else { return }
        sessions[id]?.proxy = nil
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
            "dnsAnswersSeen": "\(proxyNames?.counters.answers ?? 0)", "dnsMalformed": "\(proxyNames?.counters.malformed ?? 0)",
        ])
    }
}

extension SessionManager {
    /// Waits until an ended app proxy's steering and listeners are gone.
    func awaitProxyTeardown(_ id: UUID) async {
        await proxyTeardowns.removeValue(forKey: id)?.value
    }
}
