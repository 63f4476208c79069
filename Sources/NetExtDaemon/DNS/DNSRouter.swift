import EncryptedDNS
import Foundation
import Logging
import NetExtCore
import NetExtLinux

/// Who answers the machine's DNS while tunnels are up: the resolver file and netextd's DNS stub.
///
/// Each tunnel hands over its `DNSSettings` (or none):
/// - servers without match domains take the whole resolver file (Apple's "all queries go to the
///   tunnel's servers");
/// - servers with match domains are routed by the stub, and the file points at the stub, so only
///   names within those domains are resolved through the tunnel (`matchDomains`).
///
/// When a tunnel goes, the file goes to the remaining tunnel that wants it whole (the lowest rank:
/// an enterprise tunnel before the personal VPN), or back to its original. On-demand's name
/// watching (EvaluateConnection) keeps the stub running and in the file even with no tunnel.
///
/// The system DNS settings (`DNSSettingsProtocol`, one configuration at a time) run through the
/// stub too: their names (all, or those within their match domains) go over their encrypted
/// servers. A tunnel's DNS wins where both would answer: its match domains come first, and a
/// tunnel that takes the whole file takes it from the settings until it goes.
///
/// Not thread-safe: its owner (the session manager actor) serialises every call.
final class DNSRouter {
    /// What a tunnel's DNS settings changed.
    struct TunnelDNS: Equatable {
        /// Orders tunnels that want the whole file: the lowest rank gets it when the holder goes.
        var rank: Int
        /// The servers this tunnel wants as the whole file, whether or not they are in force.
        var fullDNS: DNSSettings?
        /// Whether the stub routes this tunnel's match domains.
        var routed = false
        /// Whether the file was written for this tunnel.
        var changedResolver = false
        /// The tunnel's link (where systemd-resolved reaches its servers).
        var interface: String?
    }

    /// The resolver file, or systemd-resolved's per-link DNS ("the file" below means either).
    let resolver: (any MachineResolver)?
    let stubAddress: SocketAddress?
    let logger: Logger
    private(set) var tunnels: [UUID: TunnelDNS] = [:]
    private(set) var stub: DNSStub?
    private var nameObserver: (@Sendable (String) -> Void)?
    /// The system DNS settings in force, and the upstreams made for them.
    private(set) var settings: (id: UUID, dns: DNSSettingsProtocol, upstreams: EncryptedDNSServerSet?)?
    /// Relay configurations' DNS-over-HTTPS servers in force (``applyRelayResolver(_:matchDomains:for:)``).
    private(set) var relayResolvers: [UUID: EncryptedDNSServerSet] = [:]
    /// Per-app relays' resolvers, by configuration (``openAppRelayResolver(_:matchDomains:excludedDomains:for:)``).
    var appRelayResolvers: [UUID: AppRelayResolver] = [:]
    /// Each server's connections, for settings.
    private let makeUpstreams: @Sendable (DNSSettingsProtocol) throws(NetExtError) -> [[any EncryptedDNSUpstream]]

    init(
        resolver: (any MachineResolver)?, stubAddress: SocketAddress?, logger: Logger,
        makeUpstreams: @escaping @Sendable (DNSSettingsProtocol) throws(NetExtError) -> [[any EncryptedDNSUpstream]] = EncryptedUpstreams.make
    ) {
        self.resolver = resolver
        self.stubAddress = stubAddress
        self.logger = logger
        self.makeUpstreams = makeUpstreams
    }

    /// Where the stub listens (its port when started on port 0), nil when it is not running.
    var stubListeningAddress: SocketAddress? { stub?.address }

    /// Whether the resolver file names the stub (no tunnel has taken the whole file).
    var resolverPointsAtStub: Bool {
        stub != nil && !tunnels.values.contains(where: { $0.changedResolver && !$0.routed })
    }

    /// The stub's counters (zero when it is not running).
    var stubCounters: DNSStub.Counters { stub?.currentCounters ?? DNSStub.Counters() }

    /// The routing owner of a DNS settings configuration's names.
    static func settingsOwner(_ id: UUID) -> String { settingsOwnerPrefix + id.uuidString }
    static let settingsOwnerPrefix = "dns-settings:"
    /// The routing owner of a relay configuration's names.
    static func relayOwner(_ id: UUID) -> String { relayOwnerPrefix + id.uuidString }
    static let relayOwnerPrefix = "relay-dns:"

    // MARK: System DNS settings

    /// Puts a DNS settings configuration in force (nil: takes it out), replacing the one in force.
    func applySettings(_ dns: DNSSettingsProtocol?, for id: UUID) throws(NetExtError) {
        defer { appRelayMachineServersChanged() }
        guard let dns else {
            if settings?.id == id { removeSettings() }
            return
        }
        let previous = settings
        if let previous, previous.id == id, previous.dns == dns { return }
        guard let address = stubAddress, let resolver else {
            throw NetExtError(.configurationInvalid, "system DNS settings need netextd's DNS stub and resolver file (NETEXT_DNS_STUB, NETEXT_RESOLV_CONF)")
        }
        let upstreams = dns.transport == .cleartext ? nil : EncryptedDNSServerSet(servers: try makeUpstreams(dns), parallel: dns.serverSelection == .parallel)
        do throws(NetExtError) {
            // Settings replacing others find the stub running: it is never stopped between them,
            // so neither the stub's address nor the resolver file is let go in between.
            try ensureStub(address: address, resolver: resolver)
        } catch {
            upstreams?.shutdown()
            throw error
        }
        settings = (id, dns, upstreams)
        let owner = Self.settingsOwner(id)
        let replaced = previous.map { Self.settingsOwner($0.id) }
        let fallback = dns.allowsCleartextFallback ? resolver.originalNameservers(excluding: address.hostText) : nil
        stub?.updateSettings { routing, routes in
            for gone in [replaced, owner].compactMap(\.self) {
                routes[gone] = nil
                routing.entries.removeAll { $0.owner == gone }
                if routing.defaultOwner == gone { routing.defaultOwner = nil }
            }
            routes[owner] = .init(upstreams: upstreams, cleartextServers: dns.servers, cleartextFallback: fallback)
            if dns.matchDomains.allSatisfy(\.isEmpty) {
                // A relay that takes every name keeps them (its DoH server is reached through it).
                if !(routing.defaultOwner?.hasPrefix(Self.relayOwnerPrefix) ?? false) { routing.defaultOwner = owner }
            } else {
                // Last: a tunnel's match domain wins a tie.
                routing.entries.append(.init(owner: owner, matchDomains: dns.matchDomains, servers: dns.servers))
            }
        }
        // Queries already on their way over the replaced servers get SERVFAIL; the next go over these.
        previous?.upstreams?.shutdown()
        if !tunnels.values.contains(where: { $0.changedResolver && !$0.routed }) {
            try resolver.installStub(nameserver: address.hostText, addingSearchDomains: [], claims: stubClaims)
        } else {
            resolver.stubClaimsChanged(stubClaims)
        }
        logger.info(previous == nil ? "system DNS settings in force" : "system DNS settings replaced", metadata: [
            "id": "\(id)", "transport": "\(dns.transport.rawValue)", "servers": "\(upstreams.map { $0.upstreams.map(\.serverDescription) } ?? dns.servers)",
            "matchDomains": "\(dns.matchDomains)", "cleartextFallback": "\(dns.allowsCleartextFallback)", "stub": "\(address)",
        ])
    }

    private func removeSettings() {
        guard let current = settings else { return }
        settings = nil
        let owner = Self.settingsOwner(current.id)
        stub?.updateSettings { routing, routes in
            routes[owner] = nil
            routing.entries.removeAll { $0.owner == owner }
            if routing.defaultOwner == owner { routing.defaultOwner = nil }
        }
        current.upstreams?.shutdown()
        logger.info("system DNS settings taken out", metadata: ["id": "\(current.id)"])
        resolver?.stubClaimsChanged(stubClaims)
        stopStubIfUnused()
    }

    /// Whether the stub is running (a tunnel routes match domains, or on-demand watches names).
    var isStubRunning: Bool { stub != nil }
    /// The stub's routing, for status and tests (empty when it is not running).
    var stubRouting: DNSRouting { stub?.currentRouting ?? DNSRouting() }

    /// Puts a tunnel's DNS settings in force, replacing what it had. `yieldToOthers`: the servers
    /// take the whole file only if no other tunnel has changed it (the personal VPN's servers
    /// assigned by its IKEv2 server). Settings without servers undo what the tunnel had.
    func apply(_ dns: DNSSettings?, for id: UUID, rank: Int, interface: String? = nil, yieldToOthers: Bool = false) throws(NetExtError) {
        defer { appRelayMachineServersChanged() }
        let previous = tunnels[id]
        var entry = TunnelDNS(rank: rank, interface: interface)
        if previous?.routed == true { unroute(id) }
        guard let dns, !dns.servers.isEmpty, let resolver else {
            tunnels[id] = entry
            if previous?.changedResolver == true { release(besides: id) }
            return
        }
        if dns.matchDomains.allSatisfy(\.isEmpty) {
            entry.fullDNS = dns
            if yieldToOthers, tunnels.contains(where: { $0.key != id && $0.value.changedResolver }) {
                tunnels[id] = entry
                return
            }
            // Recorded before writing: a failed write still leaves the tunnel's claim on the file,
            // so its removal restores the original.
            entry.changedResolver = true
            tunnels[id] = entry
            try resolver.install(dns, interface: interface)
        } else {
            entry.routed = true
            entry.changedResolver = true
            tunnels[id] = entry
            try route(dns, for: id, resolver: resolver)
        }
    }

    /// Undoes what a tunnel's DNS settings changed (the tunnel is gone).
    func remove(_ id: UUID) {
        defer { appRelayMachineServersChanged() }
        guard let previous = tunnels.removeValue(forKey: id) else { return }
        if previous.routed { unroute(id) }
        if previous.changedResolver { release(besides: id) }
    }

    /// On-demand EvaluateConnection: while `observer` is set, the stub runs (the resolver file
    /// points at it even without a tunnel) and reports every name programs resolve, before the
    /// query is routed. nil stops watching.
    func watchResolvedNames(_ observer: (@Sendable (String) -> Void)?) {
        defer { appRelayMachineServersChanged() }
        nameObserver = observer
        guard let observer, let address = stubAddress, let resolver else {
            stub?.observeQueries(nil)
            stopStubIfUnused()
            return
        }
        do throws(NetExtError) {
            let hadStub = stub != nil
            try ensureStub(address: address, resolver: resolver)
            stub?.observeQueries(observer)
            if !hadStub { try resolver.installStub(nameserver: address.hostText, addingSearchDomains: [], claims: stubClaims) }
            logger.info("DNS stub watching resolved names for on-demand", metadata: ["stub": "\(address)"])
        } catch {
            logger.error("cannot watch resolved names for on-demand", metadata: ["error": "\(error.message)"])
        }
    }

    // MARK: Relays' DNS-over-HTTPS servers

    /// A relay configuration's DoH server (``RelayProtocol/dnsOverHTTPSURL``, reached through its
    /// relays) answers the names it takes: those within `matchDomains`, or every name when there
    /// are none — before the system DNS settings, after a tunnel's match domains. Replaces what
    /// the configuration had; the stub runs and the resolver file points at it.
    func applyRelayResolver(_ upstreams: EncryptedDNSServerSet, matchDomains: [String], for id: UUID) throws(NetExtError) {
        defer { appRelayMachineServersChanged() }
        guard let address = stubAddress, let resolver else {
            upstreams.shutdown()
            throw NetExtError(.configurationInvalid, "a relay's DNS server needs netextd's DNS stub and resolver file (NETEXT_DNS_STUB, NETEXT_RESOLV_CONF)")
        }
        do throws(NetExtError) { try ensureStub(address: address, resolver: resolver) } catch {
            upstreams.shutdown()
            throw error
        }
        let previous = relayResolvers.updateValue(upstreams, forKey: id)
        let owner = Self.relayOwner(id)
        let domains = matchDomains.filter { !$0.isEmpty }
        stub?.updateSettings { routing, routes in
            routes[owner] = .init(upstreams: upstreams, cleartextServers: [], cleartextFallback: nil)
            routing.entries.removeAll { $0.owner == owner }
            if domains.isEmpty {
                routing.defaultOwner = owner
            } else {
                let settingsStart = routing.entries.firstIndex { $0.owner.hasPrefix(Self.settingsOwnerPrefix) } ?? routing.entries.endIndex
                routing.entries.insert(.init(owner: owner, matchDomains: domains, servers: []), at: settingsStart)
            }
        }
        previous?.shutdown()
        if !tunnels.values.contains(where: { $0.changedResolver && !$0.routed }) {
            try resolver.installStub(nameserver: address.hostText, addingSearchDomains: [], claims: stubClaims)
        } else {
            resolver.stubClaimsChanged(stubClaims)
        }
        logger.info("DNS: a relay's names resolved through its DNS-over-HTTPS server", metadata: [
            "configuration": "\(id)", "server": "\(upstreams.upstreams.map(\.serverDescription))", "matchDomains": "\(domains.isEmpty ? ["(every name)"] : domains)",
        ])
    }

    /// Takes a relay configuration's DoH server out (its relays stopped).
    func removeRelayResolver(for id: UUID) {
        defer { appRelayMachineServersChanged() }
        closeAppRelayResolver(for: id)
        guard let upstreams = relayResolvers.removeValue(forKey: id) else { return }
        let owner = Self.relayOwner(id)
        let settingsTakeAll = settings.map { $0.dns.matchDomains.allSatisfy(\.isEmpty) } ?? false
        let settingsOwner = settings.map { Self.settingsOwner($0.id) }
        stub?.updateSettings { routing, routes in
            routes[owner] = nil
            routing.entries.removeAll { $0.owner == owner }
            if routing.defaultOwner == owner { routing.defaultOwner = settingsTakeAll ? settingsOwner : nil }
        }
        upstreams.shutdown()
        logger.info("DNS: a relay's DNS-over-HTTPS server taken out", metadata: ["configuration": "\(id)"])
        resolver?.stubClaimsChanged(stubClaims)
        stopStubIfUnused()
    }

    // MARK: Match domains

    /// Starts the stub if needed, routes the tunnel's match domains to its servers, and points
    /// the resolver file at the stub.
    private func route(_ dns: DNSSettings, for id: UUID, resolver: any MachineResolver) throws(NetExtError) {
        guard let address = stubAddress else {
            throw NetExtError(.configurationInvalid, "the tunnel's DNS has match domains, but netextd has no DNS stub address (NETEXT_DNS_STUB)")
        }
        let systemServers = resolver.originalNameservers(excluding: address.hostText)
        try ensureStub(address: address, resolver: resolver)
        stub?.update { routing in
            routing.defaultServers = systemServers
            routing.entries.removeAll { $0.owner == id.uuidString }
            // Before the system DNS settings' entries: a tunnel wins a tie.
            let settingsStart = routing.entries.firstIndex { $0.owner.hasPrefix(Self.settingsOwnerPrefix) } ?? routing.entries.endIndex
            routing.entries.insert(.init(owner: id.uuidString, matchDomains: dns.matchDomains, servers: dns.servers), at: settingsStart)
        }
        try resolver.installStub(nameserver: address.hostText, addingSearchDomains: dns.searchDomains, claims: stubClaims)
        logger.info("DNS: match domains routed through the tunnel", metadata: [
            "matchDomains": "\(dns.matchDomains)", "servers": "\(dns.servers)", "otherNamesTo": "\(systemServers)", "stub": "\(address)",
        ])
    }

    /// Removes a tunnel's routes from the stub, and stops the stub when nothing needs it.
    private func unroute(_ id: UUID) {
        guard let stub else { return }
        stub.update { $0.entries.removeAll { $0.owner == id.uuidString } }
        resolver?.stubClaimsChanged(stubClaims)
        stopStubIfUnused()
    }

    /// The names the stub answers for, as its routing stands.
    private var stubClaims: StubClaims { StubClaims(stubRouting) }

    private func ensureStub(address: SocketAddress, resolver: any MachineResolver) throws(NetExtError) {
        guard stub == nil else { return }
        try resolver.prepareStub(address: address)
        let started: DNSStub
        do throws(NetExtError) { started = try DNSStub(address: address, device: resolver.stubDevice, logger: logger) } catch {
            resolver.stubStopped()
            throw error
        }
        let systemServers = resolver.originalNameservers(excluding: address.hostText)
        started.update { $0.defaultServers = systemServers }
        started.observeQueries(nameObserver)
        started.start()
        stub = started
    }

    private func stopStubIfUnused() {
        guard let running = stub, running.currentRouting.entries.isEmpty, nameObserver == nil, settings == nil, relayResolvers.isEmpty else { return }
        running.stop()
        stub = nil
        resolver?.stubStopped()
        // No tunnel relies on the file any more (each one that did restores it itself).
        if !tunnels.values.contains(where: \.changedResolver) { resolver?.restore() }
    }

    // MARK: The resolver file

    /// A tunnel no longer needs the resolver file: it goes to the remaining tunnel that wants it
    /// whole (lowest rank first), or back to the stub while a tunnel routes match domains or
    /// on-demand watches names, or back to the original. The file never keeps the servers of a
    /// tunnel that is gone.
    private func release(besides id: UUID) {
        guard let resolver else { return }
        let others = tunnels.filter { $0.key != id }
        // A tunnel routing match domains keeps the stub in the file.
        if others.values.contains(where: \.routed) { return }
        let successor = others.compactMap { entry in entry.value.fullDNS.map { (id: entry.key, dns: $0, rank: entry.value.rank) } }
            .min { $0.rank < $1.rank }
        if let successor {
            do throws(NetExtError) {
                try resolver.install(successor.dns, interface: tunnels[successor.id]?.interface)
                tunnels[successor.id]?.changedResolver = true
                return
            } catch {
                logger.warning("cannot install the remaining tunnel's DNS servers", metadata: ["error": "\(error.message)"])
            }
        }
        guard !others.values.contains(where: \.changedResolver) else { return }
        if nameObserver != nil || settings != nil || !relayResolvers.isEmpty, stub != nil, let address = stubAddress {
            try? resolver.installStub(nameserver: address.hostText, addingSearchDomains: [], claims: stubClaims)
        } else {
            resolver.restore()
        }
    }
}
