import EncryptedDNS
import Logging
import NetExtCore
import NetExtLinux

/// Per-app relays' resolver: the steering sends the bound apps' DNS queries (TCP and UDP to port
/// 53, wherever they were sent) here, to a ``DNSStub`` on a free port of 127.0.0.1 (and the same
/// port of ::1 when it is free too). Names the relays take — within their match domains, or every
/// name without any — are asked of the relays' DNS-over-HTTPS server through the relays (Apple's
/// `dnsOverHTTPSURL`, "accessible through the relay"), so neither the names nor the server's name
/// reach the local network; excluded names, and names outside the match domains, go to the
/// machine's resolver as it is now (``machineServersChanged(_:)``), as the apps' flows to them go
/// direct.
///
/// Not thread-safe: the DNS router (the session manager's actor) makes every call.
final class AppRelayResolver {
    /// Where the steering sends the apps' queries.
    let address: FlowSteering.LoopbackResolver
    private let stubs: [DNSStub]
    private let upstreams: EncryptedDNSServerSet
    private let owner: String
    private let matchDomains: [String]
    private let excludedDomains: [String]

    /// Starts the stubs; `upstreams` are the relays' DoH connections (shut down by ``stop()``).
    init(
        upstreams: EncryptedDNSServerSet, owner: String, matchDomains: [String], excludedDomains: [String], machineServers: [String], logger: Logger
    ) throws(NetExtError) {
        (stubs, address) = try DNSStub.onLoopback(logger: logger)
        self.upstreams = upstreams
        self.owner = owner
        self.matchDomains = matchDomains.filter { !$0.isEmpty }
        self.excludedDomains = excludedDomains.filter { !$0.isEmpty }
        let route = DNSStub.SettingsRoute(upstreams: upstreams, cleartextServers: [], cleartextFallback: nil)
        let routing = Self.routing(owner: owner, matchDomains: self.matchDomains, excludedDomains: self.excludedDomains, machineServers: machineServers)
        for stub in stubs {
            stub.updateSettings { current, routes in
                current = routing
                routes = [owner: route]
            }
            stub.start()
        }
    }

    /// The routing of the stubs: the relays' names to `owner` (the DoH route), the excluded ones
    /// (a longer match wins, so an excluded name within a match domain stays excluded) and every
    /// other name to `machineServers` in the clear.
    static func routing(owner: String, matchDomains: [String], excludedDomains: [String], machineServers: [String]) -> DNSRouting {
        var routing = DNSRouting(defaultServers: machineServers)
        if matchDomains.isEmpty {
            routing.defaultOwner = owner
        } else {
            routing.entries.append(.init(owner: owner, matchDomains: matchDomains, servers: []))
        }
        if !excludedDomains.isEmpty {
            routing.entries.append(.init(owner: excludedOwner, matchDomains: excludedDomains, servers: machineServers))
        }
        return routing
    }

    /// The owner of the excluded names' entry (answered in the clear by the machine's servers).
    static let excludedOwner = "relay-excluded"

    /// The routing the stubs follow now, for status and tests.
    var routing: DNSRouting { stubs[0].currentRouting }

    /// The machine's resolver changed (netextd's stub came or went, a tunnel took the file):
    /// the names the relays do not take follow it.
    func machineServersChanged(_ servers: [String]) {
        let routing = Self.routing(owner: owner, matchDomains: matchDomains, excludedDomains: excludedDomains, machineServers: servers)
        guard routing != self.routing else { return }
        for stub in stubs { stub.update { $0 = routing } }
    }

    /// Closes the stubs and the relays' DoH connections.
    func stop() {
        for stub in stubs { stub.stop() }
        upstreams.shutdown()
    }
}
