import Foundation
import NetExtCore
import NetExtIPC

/// The session manager's part in an app proxy: once its provider has started, netextd's
/// transparent listeners are opened and the apps' TCP flows steered to them
/// (``FlowSteering/Mode/proxy``); when the session ends, the steering goes first (new flows go
/// direct again) and the listeners after it.
extension SessionManager {
    func startProxying(_ id: UUID, provider: ProviderProcess, generation: Int) async throws(NetExtError) {
        guard isCurrent(id, generation: generation), let session = sessions[id], session.proxy == nil else { return }
        // An earlier run's steering and listeners go first.
        await proxyTeardowns.removeValue(forKey: id)?.value
        if proxyNames == nil {
            do { proxyNames = try ProxyDNSNames() } catch {
                logger.warning("app proxy: flows will carry addresses only, no host names", metadata: ["error": "\(error.message)"])
            }
        }
        let dispatcher = try AppProxyFlowDispatcher(
            channel: provider.flowChannel, configurationName: session.configuration.localizedDescription, names: proxyNames, logger: logger)
        sessions[id]?.proxy = dispatcher
        dispatcher.start()
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

    func endProxying(_ id: UUID) {
        guard let dispatcher = sessions[id]?.proxy else { return }
        sessions[id]?.proxy = nil
        let steering = appSteering
        proxyTeardowns[id] = Task {
            await steering.proxyDown(id)
            await dispatcher.stop()
        }
        let counters = dispatcher.counters
        logger.info("app proxy ended", metadata: [
            "configuration": "\(id)", "offered": "\(counters.offered)", "handled": "\(counters.handled)",
            "declined": "\(counters.declined)", "lost": "\(counters.lost)",
        ])
    }
}

extension SessionManager {
    /// Waits until an ended app proxy's steering and listeners are gone.
    func awaitProxyTeardown(_ id: UUID) async {
        await proxyTeardowns.removeValue(forKey: id)?.value
    }
}
