import Foundation
import Glibc
import HTTPFetching
import MASQUERelay
import NetExt
import NetExtCore
import NIOSSL
import Synchronization

/// The built-in relay client as a transparent proxy: the flows a relay configuration takes
/// (`RelayProtocol`: its match and excluded domains and FQDNs) are carried through its chain of
/// MASQUE relays — TCP flows as CONNECT streams, UDP flows as connect-udp streams — over one
/// TLS connection per relay, the flows' sockets glued to the streams without a thread per flow.
///
/// Started by netextd from a transparent-proxy configuration whose `providerConfiguration`
/// holds the settings under `relay` (`RelayProtocol` as a JSON object, or a string holding
/// one) and, for a lab's private CA,
/// the file of the CAs the first relay's certificate must chain to under `caFile` (the
/// system's CAs otherwise). Flows to names the settings exclude are declined and go direct.
///
/// Per-app relays (settings with `appRules`) run it as an app proxy of the bound apps
/// (`com.netext.relay.per-app`): it asks for no network rules, is handed every flow of those
/// apps, and carries the ones the relays do not take itself, straight to their destinations
/// (`DirectRelayTransport`), since an app proxy cannot hand a flow back.
public final class RelayProxyProvider: TransparentProxyProvider {
    /// What happened to the flows so far.
    public struct Counters: Sendable, Hashable {
        public var tcpCarried = 0
        public var udpCarried = 0
        public var failed = 0
        public var declined = 0
        /// Per-app relays: a bound app's flows the relays do not take, carried direct.
        public var direct = 0
    }

    struct Started: Sendable {
        var settings: RelayProtocol
        var chain: RelayChain
    }

    private let started = Mutex<Started?>(nil)
    private let counts = Mutex(Counters())
    /// How long a UDP flow lives without a datagram either way.
    static let udpIdle: Duration = .seconds(60)

    public init() {}

    public var counters: Counters { counts.withLock { $0 } }

    public func startProxy(options: [String: JSONValue]?, context: AppProxyContext) async throws {
        let settings = try Self.settings(from: context.providerConfiguration)
        let roots = try Self.trustRoots(from: context.providerConfiguration)
        let identities = try Self.identities(from: options, settings: settings)
        let tokens = try Self.tokenSource(from: options, settings: settings, configuration: context.providerConfiguration)
        // An app proxy is handed its apps' flows; a transparent proxy asks for its names'.
        if !settings.isPerApp { try await context.setTransparentProxySettings(Self.networkSettings(for: settings)) }
        try start(settings: settings, trustRoots: roots, identities: identities, tokens: tokens)
        let chain = settings.relays.compactMap(\.http2RelayURL).joined(separator: " → ")
        Self.log("carrying the flows of \(Self.describeTaken(settings)) through \(chain)\(tokens == nil ? "" : ", Privacy Pass tokens from \(settings.privacyPassIssuerURL ?? "")")")
    }

    /// Starts with `settings` (``startProxy(options:context:)`` does this after reading them);
    /// `maker` reaches the first relay (HTTP/2 over TLS unless a test says otherwise).
    func start(
        settings: RelayProtocol, trustRoots: NIOSSLTrustRoots?, identities: [Int: RelayClientIdentity] = [:], tokens: (any RelayTokenSource)? = nil,
        maker: any RelayTransportMaker = HTTP2RelayTransportMaker()
    ) throws(NetExtError) {
        let chain = try RelayChain(relays: settings.relays, trustRoots: trustRoots, identities: identities, tokens: tokens, maker: maker)
        started.withLock { $0 = Started(settings: settings, chain: chain) }
    }

    public func stopProxy(with reason: ProviderStopReason) async {
        let chain = started.withLock { current -> RelayChain? in
            defer { current = nil }
            return current?.chain
        }
        await chain?.close()
        let counters = self.counters
        Self.log("stopped (\(reason.rawValue)): \(counters.tcpCarried) TCP and \(counters.udpCarried) UDP flows carried, \(counters.direct) direct, \(counters.failed) failed, \(counters.declined) declined")
    }

    /// Where a flow to `host` goes: through the chain, direct (a per-app relay's bound app's
    /// flow the relays do not take), or back to netextd (nil: declined).
    private func route(_ host: String, started: Started) -> (any RelayTransport)?? {
        if started.settings.routesThroughRelays(host: host) { return .some(nil) }
        return started.settings.isPerApp ? .some(DirectRelayTransport()) : nil
    }

    public func handleNewFlow(_ flow: AppProxyTCPFlow) -> Bool {
        // netextd's resolver reaching the relays' DoH server: always through the relays, to
        // the name (the last relay looks it up), whatever the domains say.
        let resolverHost = Self.resolverFlowHost(flow)
        guard let started = started.withLock({ $0 }), flow.direction == .outbound,
              let route = resolverHost != nil ? .some(nil) : route(flow.remoteHostname ?? flow.remoteEndpoint.hostname, started: started) else {
            counts.withLock { $0.declined += 1 }
            return false
        }
        guard let (socket, ended) = flow.takeSocket() else { return false }
        let destination = resolverHost.map { NetworkEndpoint(hostname: $0, port: flow.remoteEndpoint.port) } ?? flow.remoteEndpoint
        Task { [self] in
            let via = route == nil ? "the relays" : "direct"
            let client: any RelayTransport
            do { client = if let direct = route { direct } else { try await started.chain.client() } } catch {
                // No relay: the app's connection is reset (netextd handed it over set to reset
                // when closed), not left waiting.
                _ = Glibc.close(socket)
                ended()
                counts.withLock { $0.failed += 1 }
                Self.log("a TCP flow could not be carried: no connection to the relay: \(error)")
                return
            }
            do {
                try await client.carry(socket: socket, toHost: destination.hostname, port: destination.port, ended: ended)
                counts.withLock { route == nil ? ($0.tcpCarried += 1) : ($0.direct += 1) }
            } catch {
                counts.withLock { $0.failed += 1 }
                Self.log("a TCP flow could not be carried (\(via)): \(error)")
            }
        }
        return true
    }

    /// The DoH server's name of a flow netextd's resolver opened (``RelayProtocol/resolverFlowSource``,
    /// no address), nil for every other flow.
    static func resolverFlowHost(_ flow: AppProxyTCPFlow) -> String? {
        guard flow.metaData.sourceAppSigningIdentifier == RelayProtocol.resolverFlowSource, flow.remoteEndpoint.hostname == "0.0.0.0",
              let name = flow.remoteHostname, !name.isEmpty else { return nil }
        return name
    }

    public func handleNewUDPFlow(_ flow: AppProxyUDPFlow, initialRemoteEndpoint: NetworkEndpoint) -> Bool {
        guard let started = started.withLock({ $0 }),
              let route = route(flow.remoteHostname ?? flow.remoteEndpoint.hostname, started: started) else {
            counts.withLock { $0.declined += 1 }
            return false
        }
        Task { [self] in
            do {
                let client = if let direct = route { direct } else { try await started.chain.client() }
                let relayed = try await client.openUDP(toHost: flow.remoteEndpoint.hostname, port: flow.remoteEndpoint.port)
                counts.withLock { route == nil ? ($0.udpCarried += 1) : ($0.direct += 1) }
                await Self.carryDatagrams(flow, through: relayed)
            } catch {
                counts.withLock { $0.failed += 1 }
                Self.log("a UDP flow could not be carried: \(error)")
            }
            flow.close()
        }
        return true
    }

    /// Moves datagrams both ways until the flow has been idle for ``udpIdle`` or either end
    /// has closed (the app's flow, or the relay's stream: within a second).
    static func carryDatagrams(_ flow: AppProxyUDPFlow, through relayed: any RelayDatagramPath) async {
        let endpoint = flow.remoteEndpoint
        let state = Mutex((lastActivity: ContinuousClock.now, relayEnded: false))
        let back = Task {
            for await payload in relayed.datagrams {
                state.withLock { $0.lastActivity = .now }
                do { try flow.writeDatagrams([FlowDatagram(data: Data(payload), endpoint: endpoint)]) } catch { break }
            }
            state.withLock { $0.relayEnded = true }
        }
        while !state.withLock({ $0.relayEnded }) {
            let datagrams: [FlowDatagram]
            do { datagrams = try await flow.readDatagrams(timeout: .seconds(1)) } catch { break }
            if datagrams.isEmpty {
                if ContinuousClock.now - state.withLock({ $0.lastActivity }) > udpIdle { break }
                continue
            }
            state.withLock { $0.lastActivity = .now }
            for datagram in datagrams { relayed.send(Array(datagram.data)) }
        }
        relayed.close()
        back.cancel()
    }

    /// The rules that bring the taken flows here: a host rule per match domain and FQDN (every
    /// address and port when there are none), excluded domains as excluded rules. A host rule
    /// covers the name's subdomains too, so FQDNs (exact names) are judged per flow: the flows
    /// they do not take are declined and go direct.
    static func networkSettings(for settings: RelayProtocol) -> TransparentProxyNetworkSettings {
        let matching = settings.matchDomains + settings.matchFQDNs
        let included: [NetworkRule] = matching.isEmpty
            ? [NetworkRule(destinationNetwork: try! IPPrefix("0.0.0.0/0")), NetworkRule(destinationNetwork: try! IPPrefix("::/0"))]
            : matching.map { NetworkRule(destinationHost: NetworkEndpoint(hostname: Self.bare($0), port: 0)) }
        let excluded = settings.excludedDomains.map { NetworkRule(destinationHost: NetworkEndpoint(hostname: Self.bare($0), port: 0)) }
        return TransparentProxyNetworkSettings(includedNetworkRules: included, excludedNetworkRules: excluded)
    }

    private static func bare(_ domain: String) -> String {
        domain.hasPrefix(".") ? String(domain.dropFirst()) : domain
    }

    /// The settings under `relay`, checked.
    static func settings(from configuration: [String: JSONValue]) throws(NetExtError) -> RelayProtocol {
        guard let value = configuration["relay"] else {
            throw NetExtError(.configurationInvalid, "providerConfiguration has no 'relay' settings")
        }
        let settings: RelayProtocol
        do {
            // An object, or a string holding one (`netext create --config relay=JSON` gives strings).
            let json: Data
            if case .string(let text) = value { json = Data(text.utf8) } else { json = try JSONEncoder().encode(value) }
            settings = try JSONDecoder().decode(RelayProtocol.self, from: json)
        } catch {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'relay': \(JSONDecodingText.describe(error))")
        }
        let check = Configuration(owner: Owner(uid: 0, appIdentifier: "relay"), localizedDescription: "relay", protocolConfiguration: .relay(settings))
        do { try check.validate() } catch { throw NetExtError(.configurationInvalid, "providerConfiguration 'relay': \(error.message)") }
        return settings
    }

    /// The key netextd hands the relays' client identities over under, in the start options
    /// (an object: relay index → the PEM text netextd read from `identityReference`; the
    /// provider runs as nobody and cannot read a root-owned key file itself). Never stored.
    public static let identitiesOption = "relayIdentities"

    /// Each relay's identity by index; a relay whose settings name an identity must have one
    /// here (presented, or the start fails: an identity left out would weaken what was asked for).
    static func identities(from options: [String: JSONValue]?, settings: RelayProtocol) throws(NetExtError) -> [Int: RelayClientIdentity] {
        var given: [String: JSONValue] = [:]
        if case .object(let object)? = options?[identitiesOption] { given = object }
        var identities: [Int: RelayClientIdentity] = [:]
        for (index, relay) in settings.relays.enumerated() where relay.identityReference != nil {
            guard case .string(let pem)? = given[String(index)] else {
                throw NetExtError(.configurationInvalid, "relays[\(index)].identityReference: netextd handed over no client identity for this relay")
            }
            do { identities[index] = try RelayClientIdentity(pem: pem) } catch {
                throw NetExtError(.configurationInvalid, "relays[\(index)].identityReference: the client identity is not usable: \(error.description)")
            }
        }
        return identities
    }

    /// The key netextd hands the Privacy Pass issuer's credential over under, in the start
    /// options (read from the secret store; the provider cannot read it).
    public static let privacyPassTokenOption = "relayPrivacyPassToken"

    /// Fresh Privacy Pass tokens from the settings' issuer (``RelayProtocol/privacyPassIssuerURL``)
    /// for every relay of the chain that asks for them; nil without an issuer. The issuer's
    /// certificate chains to the lab's `caFile` when one is given, else to the system's CAs.
    static func tokenSource(
        from options: [String: JSONValue]?, settings: RelayProtocol, configuration: [String: JSONValue]
    ) throws(NetExtError) -> (any RelayTokenSource)? {
        guard let text = settings.privacyPassIssuerURL else { return nil }
        guard case .string(let credential)? = options?[privacyPassTokenOption], !credential.isEmpty else {
            throw NetExtError(.configurationInvalid, "privacyPassIssuerURL: netextd handed over no credential for the issuer")
        }
        return try tokenSource(issuerURL: text, credential: credential, configuration: configuration)
    }

    /// Tokens from the issuer at `text` (checked by the caller) with `credential`, its
    /// certificate checked against the provider configuration's `caFile` when there is one.
    static func tokenSource(issuerURL text: String, credential: String, configuration: [String: JSONValue]) throws(NetExtError) -> PrivacyPassRelayTokens {
        guard let url = URL(string: text) else { throw NetExtError(.configurationInvalid, "privacyPassIssuerURL: '\(text)' is not a URL") }
        var tls: ClientTLS?
        if case .string(let file)? = configuration["caFile"] {
            do throws(TLSSetupError) { tls = try ClientTLS(caFile: file) } catch {
                throw NetExtError(.configurationInvalid, "providerConfiguration 'caFile': \(error.description)")
            }
        }
        return PrivacyPassRelayTokens(issuerURL: url, credential: credential, tls: tls)
    }

    static func trustRoots(from configuration: [String: JSONValue]) throws(NetExtError) -> NIOSSLTrustRoots? {
        guard case .string(let file)? = configuration["caFile"] else { return nil }
        do { return .certificates(try NIOSSLCertificate.fromPEMFile(file)) } catch {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'caFile': \(file) holds no readable PEM certificate")
        }
    }

    static func describeTaken(_ settings: RelayProtocol) -> String {
        let matching = settings.matchDomains + settings.matchFQDNs
        let excluded = settings.excludedDomains + settings.excludedFQDNs
        return (matching.isEmpty ? "every name" : matching.joined(separator: ", ")) + (excluded.isEmpty ? "" : " except \(excluded.joined(separator: ", "))")
    }

    static func log(_ message: String) {
        FileHandle.standardError.write(Data("netext-relay-provider: \(message)\n".utf8))
    }
}
