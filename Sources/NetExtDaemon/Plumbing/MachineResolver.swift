import NetExtCore
import NetExtLinux

/// Where the machine's own DNS queries go, which netextd changes while tunnels or DNS settings
/// are up: the resolver file (`ResolverConfiguration`), or systemd-resolved's per-link DNS where
/// resolved runs (`ResolvedRegistration`, over D-Bus; the file is then resolved's and left alone).
protocol MachineResolver: Sendable {
    /// Which it is, for status: "the resolver file PATH", "systemd-resolved, link NAME (D-Bus)".
    var summary: String { get }
    /// The servers the machine used before netextd (without `stub`): the stub's servers for names
    /// no tunnel or setting claims, and excluded apps' resolvers.
    func originalNameservers(excluding stub: String) -> [String]
    /// A tunnel's servers take every name (`interface`: the tunnel's link, where they are reached).
    func install(_ dns: DNSSettings, interface: String?) throws(NetExtError)
    /// Before the stub binds `address`: makes sure the address can be bound (a link of its own
    /// under resolved).
    func prepareStub(address: SocketAddress) throws(NetExtError)
    /// The link the stub's sockets are tied to (nil: none; loopback needs none).
    var stubDevice: String? { get }
    /// Names go to netextd's stub at `nameserver`, with `searchDomains` added to the original
    /// ones. The file sends it every name; resolved only those `claims` names.
    func installStub(nameserver: String, addingSearchDomains searchDomains: [String], claims: StubClaims) throws(NetExtError)
    /// What the running stub answers for changed (a route added or removed).
    func stubClaimsChanged(_ claims: StubClaims)
    /// The stub stopped: what `prepareStub` made is removed.
    func stubStopped()
    /// Back to how the machine was before netextd changed anything.
    func restore()
}

/// The names netextd's stub answers for: the match domains routed through it, and whether it
/// answers every other name too (system DNS settings without match domains).
struct StubClaims: Equatable, Sendable {
    var matchDomains: [String] = []
    var allNames = false

    init(matchDomains: [String] = [], allNames: Bool = false) {
        self.matchDomains = matchDomains
        self.allNames = allNames
    }

    /// What the stub's routing sends it: each entry's match domains (once each, in order), and
    /// every name when a default owner answers what no entry matches.
    init(_ routing: DNSRouting) {
        var seen = Set<String>()
        for entry in routing.entries {
            for domain in entry.matchDomains where !domain.isEmpty && seen.insert(domain).inserted { matchDomains.append(domain) }
        }
        allNames = routing.defaultOwner != nil
    }
}

extension ResolverConfiguration: MachineResolver {
    var summary: String { "the resolver file \(path)" }
    var stubDevice: String? { nil }
    func install(_ dns: DNSSettings, interface: String?) throws(NetExtError) { try install(dns) }
    func prepareStub(address: SocketAddress) throws(NetExtError) {}
    /// The file names the stub for every name; the stub itself routes them.
    func installStub(nameserver: String, addingSearchDomains searchDomains: [String], claims: StubClaims) throws(NetExtError) {
        try installStub(nameserver: nameserver, addingSearchDomains: searchDomains)
    }
    func stubClaimsChanged(_ claims: StubClaims) {}
    func stubStopped() {}
}
