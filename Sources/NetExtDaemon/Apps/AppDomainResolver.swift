import Logging
import NetExtCore
import NetExtLinux

/// The real ``AppSteeringController/DomainResolverOpener``: a ``DNSStub`` on a free port of
/// 127.0.0.1 (and the same port of ::1 when it is free too) that sends names in the rule's
/// domains to the tunnel's servers — its queries carry the tunnel's mark, so they go through
/// the tunnel whatever the main table says — and every other name to the machine's resolvers.
enum AppDomainResolver {
    static func opener(logger: Logger) -> AppSteeringController.DomainResolverOpener {
        { request, onAnswer throws(NetExtError) in
            let (stubs, address) = try DNSStub.onLoopback(tunnelMark: request.mark, logger: logger)
            for stub in stubs {
                stub.update { routing in
                    routing = DNSRouting(entries: [.init(owner: "app-rule", matchDomains: request.domains, servers: request.tunnelServers)], defaultServers: request.otherServers)
                }
                stub.observeAnswers(onAnswer)
                stub.start()
            }
            return AppSteeringController.DomainResolver(address: address) {
                for stub in stubs { stub.stop() }
            }
        }
    }
}
