import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// The machine's DNS through systemd-resolved, which owns `/etc/resolv.conf` where it runs:
/// netextd gives links their DNS over D-Bus (`ResolvedManager`) and never writes the file.
///
/// - netextd's stub gets a link of its own (`linkName`) holding the stub's address: resolved
///   ignores loopback links and sends a link's queries out of that link (`IP_UNICAST_IF`), so
///   the stub's address must be on it. The link is a TUN device netextd holds open (the
///   kernels here have no dummy links): nothing is ever routed into it — packets to a local
///   address go through loopback — and it vanishes with netextd, so a crash leaves none behind. The link's routing domains are the
///   names the stub answers for (`~corp.example` per match domain; `~.` and the DNS default
///   route for settings without match domains), so resolved sends it those names and nothing
///   else (systemd-resolved(8), "Protocols and Routing").
/// - A tunnel whose servers take every name has them set on the tunnel's own link, with `~.`
///   and the default route (what NetworkManager and resolvconf do for a VPN).
///
/// resolved sends names no routing domain matches to every default-route link at once, so
/// while a NetExt link takes every name (`~.`) the others' DefaultRoute is turned off
/// (`SetLinkDefaultRoute`, what NetworkManager does for a VPN whose DNS has priority) and turned
/// on again when none does; the links taken from are kept in `holdFile`, so a netextd that
/// crashed gives them back at its next start (`restore`). A link resolved will not change (one
/// systemd-networkd manages: "LinkBusy") keeps its default route, and `summary` says so: its
/// servers are asked too, unless the DNS guard refuses other programs' DNS. Longer routing
/// domains (match domains) go to the NetExt link alone.
final class ResolvedRegistration: MachineResolver {
    /// The stub's link.
    let linkName: String
    /// resolved's own list of the machine's servers (systemd-resolved(8): "/run/systemd/resolve/resolv.conf").
    let uplinkFile: String
    private let connect: @Sendable () throws(DBusError) -> DBusConnection
    /// Where the links whose default route netextd took are kept (nil: nowhere).
    let holdFile: String?
    private let state = Mutex(State())

    private struct State {
        var bus: DBusConnection?
        /// The stub's link index while it exists, its TUN descriptor, and what it was last given.
        var stubLink: Int32?
        var stubLinkDescriptor: Int32 = -1
        var stubRegistration: Registration?
        /// The index of the tunnel link given every name.
        var tunnelLink: Int32?
        /// The stub's nameserver and search domains while names go to it.
        var stub: (nameserver: String, searchDomains: [String])?
        /// The other links whose default route was taken, and those resolved kept it on.
        var taken = DefaultRouteHold()
        var refused: [String] = []

        /// Whether a NetExt link takes every name (the stub's, or a tunnel's).
        var holdsEveryName: Bool { tunnelLink != nil || stubRegistration?.defaultRoute == true }
    }

    /// What one link is given.
    struct Registration: Equatable {
        var servers: [String]
        var domains: [ResolvedManager.Domain]
        var defaultRoute: Bool

        /// The stub's link: its address, a routing domain per claimed match domain, `~.` and
        /// the default route when it claims every name, and the search domains.
        init(stub nameserver: String, claims: StubClaims, searchDomains: [String]) {
            servers = [nameserver]
            domains = claims.matchDomains.map { ResolvedManager.Domain($0, routingOnly: true) }
            if claims.allNames { domains.append(.init(".", routingOnly: true)) }
            domains += searchDomains.map { ResolvedManager.Domain($0, routingOnly: false) }
            defaultRoute = claims.allNames
        }

        init(servers: [String], domains: [ResolvedManager.Domain], defaultRoute: Bool) {
            self.servers = servers
            self.domains = domains
            self.defaultRoute = defaultRoute
        }
    }

    init(linkName: String = "netext-dns", uplinkFile: String = "/run/systemd/resolve/resolv.conf", holdFile: String? = nil,
         connect: @escaping @Sendable () throws(DBusError) -> DBusConnection = { () throws(DBusError) in try DBusConnection.system() }) {
        self.linkName = linkName
        self.uplinkFile = uplinkFile
        self.holdFile = holdFile
        self.connect = connect
    }

    /// Whether systemd-resolved runs on the system bus (checked once, at netextd's start).
    static func resolvedRuns() -> Bool {
        guard let bus = try? DBusConnection.system(timeoutSeconds: 2) else { return false }
        defer { bus.close() }
        return ResolvedManager.isRunning(on: bus)
    }

    // MARK: MachineResolver

    var summary: String {
        let (taken, refused) = state.withLock { ($0.taken.links.map(\.name), $0.refused) }
        var text = "systemd-resolved, link \(linkName) (D-Bus)"
        if !taken.isEmpty { text += "; the DNS default route taken from \(taken.joined(separator: ", "))" }
        if !refused.isEmpty { text += "; \(refused.joined(separator: ", ")) kept it (resolved refused the change: their servers are asked too, unless other DNS is prohibited)" }
        return text
    }
    /// The stub answers only what arrives for its link: this machine's queries, never another
    /// machine's sent to the link's address.
    var stubDevice: String? { linkName }

    func originalNameservers(excluding stub: String) -> [String] {
        let text = (try? String(contentsOfFile: uplinkFile, encoding: .utf8)) ?? ""
        return ResolverFileText.values(of: "nameserver", in: text).filter { $0 != stub }
    }

    func install(_ dns: DNSSettings, interface: String?) throws(NetExtError) {
        guard let interface, let index = Self.linkIndex(interface) else {
            throw NetExtError(.configurationInvalid, "the tunnel's DNS servers need its link for systemd-resolved, and \(interface ?? "no link") was not found")
        }
        try state.withLock { (state: inout State) throws(NetExtError) in
            if let previous = state.tunnelLink, previous != index { revert(previous, &state) }
            state.tunnelLink = index
            let domains = [ResolvedManager.Domain(".", routingOnly: true)] + dns.searchDomains.map { ResolvedManager.Domain($0, routingOnly: false) }
            try register(Registration(servers: dns.servers, domains: domains, defaultRoute: true), link: index, &state)
            followEveryName(&state)
        }
    }

    func prepareStub(address: SocketAddress) throws(NetExtError) {
        try state.withLock { (state: inout State) throws(NetExtError) in
            guard state.stubLink == nil else { return }
            (state.stubLinkDescriptor, state.stubLink) = try makeStubLink(address: address)
        }
    }

    func installStub(nameserver: String, addingSearchDomains searchDomains: [String], claims: StubClaims) throws(NetExtError) {
        try state.withLock { (state: inout State) throws(NetExtError) in
            guard let link = state.stubLink else { throw NetExtError(.connectionFailed, "the DNS stub's link \(linkName) does not exist") }
            state.stub = (nameserver, searchDomains)
            defer { followEveryName(&state) }
            try register(Registration(stub: nameserver, claims: claims, searchDomains: searchDomains), link: link, &state)
        }
    }

    func stubClaimsChanged(_ claims: StubClaims) {
        state.withLock { state in
            guard let link = state.stubLink, let stub = state.stub else { return }
            do throws(NetExtError) {
                try register(Registration(stub: stub.nameserver, claims: claims, searchDomains: stub.searchDomains), link: link, &state)
            } catch {
                // The previous registration stays with resolved; the next change tries again.
                state.stubRegistration = nil
            }
            followEveryName(&state)
        }
    }

    func stubStopped() {
        state.withLock { state in
            guard let link = state.stubLink else { return }
            revert(link, &state)
            state.stub = nil
            state.stubRegistration = nil
            state.stubLink = nil
            close(state.stubLinkDescriptor)
            state.stubLinkDescriptor = -1
            followEveryName(&state)
        }
    }

    /// Takes back what a tunnel link was given; the stub's link keeps its registration while the
    /// stub runs (its claims follow the stub's routing), and goes with the stub.
    /// Also gives back the default routes a crashed netextd took (kept in `holdFile`).
    func restore() {
        state.withLock { state in
            if let tunnel = state.tunnelLink { revert(tunnel, &state) }
            state.tunnelLink = nil
            if state.taken.links.isEmpty, let holdFile, let kept = DefaultRouteHold(contentsOf: holdFile) { state.taken = kept }
            followEveryName(&state)
        }
    }

    // MARK: Doing it

    private func register(_ registration: Registration, link: Int32, _ state: inout State) throws(NetExtError) {
        if link == state.stubLink, state.stubRegistration == registration { return }
        do throws(DBusError) {
            let manager = ResolvedManager(bus: try bus(&state))
            try manager.setServers(registration.servers, link: link)
            try manager.setDomains(registration.domains, link: link)
            try manager.setDefaultRoute(registration.defaultRoute, link: link)
            if link == state.stubLink {
                if state.stubRegistration == nil {
                    // Once per link: the stub speaks plain DNS on a link with no neighbours to ask.
                    try manager.setMode("SetLinkDNSOverTLS", "no", link: link)
                    try manager.setMode("SetLinkLLMNR", "no", link: link)
                    try manager.setMode("SetLinkMulticastDNS", "no", link: link)
                }
                state.stubRegistration = registration
            }
        } catch {
            state.bus = nil
            throw NetExtError(.connectionFailed, "systemd-resolved refused link \(link)'s DNS: \(error.description)")
        }
    }

    /// While a NetExt link takes every name, the other links' default route is taken (each
    /// link once: one that appears later is taken at the next change); when none does, it is
    /// given back to the links that still exist under the same name.
    private func followEveryName(_ state: inout State) {
        if state.holdsEveryName {
            takeDefaultRoutes(&state)
        } else if !state.taken.links.isEmpty || !state.refused.isEmpty {
            giveBackDefaultRoutes(&state)
        }
    }

    private func takeDefaultRoutes(_ state: inout State) {
        let ours = Set([state.stubLink, state.tunnelLink].compactMap { $0 })
        for link in DefaultRouteHold.Link.current() where !ours.contains(link.index) && !state.taken.links.contains(link) && !state.refused.contains(link.name) {
            do throws(DBusError) {
                let manager = ResolvedManager(bus: try bus(&state))
                guard try manager.isDefaultRoute(link: link.index) else { continue }
                // Kept before it is taken: a crash in between gives back a route that was on.
                state.taken.links.append(link)
                state.taken.write(to: holdFile)
                do throws(DBusError) { try manager.setDefaultRoute(false, link: link.index) } catch {
                    state.taken.links.removeAll { $0 == link }
                    state.taken.write(to: holdFile)
                    throw error
                }
            } catch {
                switch error {
                case .remote(let name, _) where name.hasSuffix(".NoSuchLink"): break  // not one of resolved's links
                case .remote: state.refused.append(link.name)  // "LinkBusy" (networkd's), or not allowed
                default:
                    // No bus: the next change tries again (not one connection attempt a link).
                    state.bus = nil
                    return
                }
            }
        }
    }

    private func giveBackDefaultRoutes(_ state: inout State) {
        let present = Set(DefaultRouteHold.Link.current())
        var left: [DefaultRouteHold.Link] = []
        for (position, link) in state.taken.links.enumerated() where present.contains(link) {
            do throws(DBusError) { try ResolvedManager(bus: try bus(&state)).setDefaultRoute(true, link: link.index) } catch {
                if case .remote = error { continue }  // resolved forgot the link: nothing to give back
                state.bus = nil
                left = Array(state.taken.links[position...])
                break
            }
        }
        // What could not be told (no bus) is tried again at the next change or start.
        state.taken.links = left
        state.taken.write(to: holdFile)
        state.refused = []
    }

    private func revert(_ link: Int32, _ state: inout State) {
        do throws(DBusError) {
            try ResolvedManager(bus: try bus(&state)).revert(link: link)
        } catch {
            state.bus = nil
        }
    }

    /// The connection to the system bus, made again when the last one failed.
    private func bus(_ state: inout State) throws(DBusError) -> DBusConnection {
        if let bus = state.bus { return bus }
        let made = try connect()
        state.bus = made
        return made
    }

    /// The stub's link: a TUN device holding the stub's address, up; its descriptor and index.
    private func makeStubLink(address: SocketAddress) throws(NetExtError) -> (Int32, Int32) {
        let descriptor: Int32
        do { descriptor = try TunDevice.open(pattern: linkName, offload: false).fd } catch {
            throw NetExtError(.connectionFailed, "cannot make the DNS stub's link \(linkName): \(error)")
        }
        if !address.isIPv6 {
            // An IPv4 stub's link needs no IPv6 (no link-local address, no solicitations queued).
            try? "1".write(toFile: "/proc/sys/net/ipv6/conf/\(linkName)/disable_ipv6", atomically: false, encoding: .utf8)
        }
        let prefix = address.isIPv6 ? "/128" : "/32"
        let steps: [[String]] = [
            ["address", "add", address.hostText + prefix, "dev", linkName],
            ["link", "set", linkName, "up"],
        ]
        for step in steps {
            let (status, output) = CommandRunner.run(CommandRunner.ipPath, step)
            guard status == 0 else {
                close(descriptor)
                throw NetExtError(.connectionFailed, "cannot set up the DNS stub's link \(linkName) (ip \(step.joined(separator: " "))): \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
        guard let index = Self.linkIndex(linkName) else {
            close(descriptor)
            throw NetExtError(.connectionFailed, "the DNS stub's link \(linkName) has no index")
        }
        return (descriptor, index)
    }

    static func linkIndex(_ name: String) -> Int32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : Int32(index)
    }
}
