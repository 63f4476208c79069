import Foundation
import HTTPFetching
import NetExtCore
import NetExtLinux

/// netextd's captive portal detection on one interface, three steps whose findings are all kept:
/// 1. the network's announcement: a DHCPINFORM on the interface asking for option 114
///    (RFC 8910 §2.1), answered by the network's DHCP server; without one, a DHCPv6
///    Information-Request for option 103 (§2.2) and a Router Solicitation for option 37 (§2.3);
/// 2. the captive portal API the announcement names (RFC 8908), fetched over HTTPS with the
///    system's CAs (or `NETEXT_CAPTIVE_PORTAL_CA_FILE`, a lab's);
/// 3. the connectivity check, when one is configured: a plain-HTTP GET bound to the interface.
struct CaptivePortalDetector: Sendable {
    /// The check configured for netextd (`--connectivity-check-url`), used when a request names none.
    let standardProbe: ConnectivityProbe?
    let caFile: String?

    /// The DHCP options asked for: subnet mask, router, DNS servers (for the names detection
    /// connects to: `NetworkNameResolver`), captive portal.
    static let requestedOptions: [UInt8] = [1, 3, 6, CaptivePortalAnnouncement.dhcpv4Option]

    /// `guardInForce`: a kill switch holds traffic. The DHCP exchange passes it (the guard lets
    /// DHCP through), and so do the API's request and the check: their sockets are bound to the
    /// interface and carry `TrafficGuard.detectionMark`.
    func detect(interface: String, probe requested: ConnectivityProbe?, guardInForce: Bool = false) async -> CaptivePortalDetection {
        var announcement: CaptivePortalAnnouncement?
        var announcementProblem: String?
        // The network's DNS servers, from the same DHCP answer (or DHCPv6's, or the routers'): the
        // API's and the check's names are looked up with them, out of this interface (none: the
        // system's resolver).
        var nameServers: [String] = []
        let identity = InterfaceIdentity.of(interface)
        if let identity {
            let outcome = await BlockingWork.run { Result { () throws(SystemError) in try DHCPInformExchange.run(interface: interface, identity: identity, requesting: Self.requestedOptions, attempts: 2) } }
            switch outcome {
            case .success(let exchange):
                if let reply = exchange.reply {
                    nameServers = (try? reply.domainNameServers()) ?? []
                    do throws(CaptivePortalError) {
                        announcement = try CaptivePortalAnnouncement.from(reply)
                        if announcement == nil { announcementProblem = "the DHCP server's answer carries no option 114 (captive portal)" }
                    } catch {
                        announcementProblem = error.description
                    }
                } else {
                    announcementProblem = "no DHCP server answered a DHCPINFORM on \(interface) within 3 s"
                        + (exchange.lastProblem.map { " (\(exchange.ignored) other datagrams; the last malformed: \($0))" } ?? "")
                }
            case .failure(let error):
                announcementProblem = "cannot ask the DHCP server: \(error)"
            }
        } else {
            announcementProblem = "\(interface) has no IPv4 address (or does not exist)"
        }
        var announcementSource: String? = announcement == nil ? nil : "DHCP option 114"
        if announcement == nil {
            // No word over DHCPv4: the network's DHCPv6 servers (RFC 8910 §2.2) and its routers
            // (§2.3) are asked at once; DHCPv6's answer is taken first.
            let hardware = InterfaceIdentity.hardwareAddress(of: interface)
            async let overDHCPv6 = announcementOverDHCPv6(interface, hardware: hardware)
            async let fromRouters = announcementFromRouters(interface, hardware: hardware)
            let (dhcpv6, dhcpv6Problem, dhcpv6Servers) = await overDHCPv6
            let (advertised, routersProblem, advertisedServers) = await fromRouters
            // DNS servers from DHCPv4 came first; else DHCPv6's option 23, then the routers' RDNSS.
            if nameServers.isEmpty {
                for server in dhcpv6Servers + advertisedServers where !nameServers.contains(server) { nameServers.append(server) }
            }
            if let dhcpv6 {
                announcement = dhcpv6
                announcementSource = "DHCPv6 option 103"
                announcementProblem = nil
            } else if let advertised {
                announcement = advertised
                announcementSource = "Router Advertisement option 37"
                announcementProblem = nil
            } else {
                announcementProblem = [announcementProblem, dhcpv6Problem, routersProblem].compactMap { $0 }.joined(separator: "; ")
            }
        }

        let resolver = nameServers.isEmpty ? nil : NetworkNameResolver(servers: nameServers, interface: interface, preferIPv6: identity == nil)
        var api: CaptivePortalAPIStatus?
        var apiProblem: String?
        if case .api(let url)? = announcement {
            do throws(CaptivePortalError) { api = try await fetchAPI(url, interface: interface, resolver: resolver) } catch { apiProblem = error.description }
        }

        var probeResult: CaptivePortalDetection.ProbeResult?
        var probeProblem: String?
        if let probe = requested ?? standardProbe {
            let fetched = await BlockingWork.run {
                Self.resolving(probe.url.host, with: resolver) { (address) throws(SystemError) in
                    try HTTPConnectivityCheck.fetch(probe.url, address: address, interface: interface, mark: TrafficGuard.detectionMark)
                }
            }
            switch fetched {
            case .success(let bytes):
                do throws(CaptivePortalError) {
                    let response = try ProbeResponse.parse(bytes)
                    probeResult = .init(url: probe.url, status: response.status, verdict: probe.verdict(status: response.status, location: response.location, body: response.body))
                } catch {
                    probeProblem = error.description
                }
            case .failure(let error):
                probeProblem = "the connectivity check got no answer: \(error)"
            }
        }
        return CaptivePortalDetection(
            interface: interface, announcement: announcement, announcementProblem: announcementProblem, api: api, apiProblem: apiProblem,
            probe: probeResult, probeProblem: probeProblem, announcementSource: announcementSource)
    }

    /// An Information-Request on the interface (its `hardware` address in the DUID) asking for
    /// options 103 and 23: the announcement, or why there is none, and the DNS servers it names.
    private func announcementOverDHCPv6(_ interface: String, hardware: [UInt8]) async -> (CaptivePortalAnnouncement?, String?, [String]) {
        let outcome = await BlockingWork.run {
            Result { () throws(SystemError) in
                try DHCPv6InformationExchange.run(
                    interface: interface, hardwareAddress: hardware, requesting: [DHCPv6Message.captivePortalOption, DHCPv6Message.dnsServersOption],
                    attempts: 2, waitMilliseconds: 500)
            }
        }
        switch outcome {
        case .success(let exchange):
            guard let reply = exchange.reply else {
                return (nil, "no DHCPv6 server answered an Information-Request on \(interface) within 1.5 s"
                    + (exchange.lastProblem.map { " (\(exchange.ignored) other datagrams; the last malformed: \($0))" } ?? ""), [])
            }
            let servers = (try? reply.dnsServers()) ?? []
            do throws(CaptivePortalError) {
                guard let found = try CaptivePortalAnnouncement.from(reply) else { return (nil, "the DHCPv6 server's Reply carries no option 103 (captive portal)", servers) }
                return (found, nil, servers)
            } catch {
                return (nil, error.description, servers)
            }
        case .failure(let error):
            return (nil, "cannot ask a DHCPv6 server: \(error)", [])
        }
    }

    /// A Router Solicitation on the interface: the announcement of the first Router
    /// Advertisement carrying option 37, or why there is none, and the DNS servers the
    /// advertisements name (RDNSS).
    private func announcementFromRouters(_ interface: String, hardware: [UInt8]) async -> (CaptivePortalAnnouncement?, String?, [String]) {
        let outcome = await BlockingWork.run {
            Result { () throws(SystemError) in try RouterSolicitationExchange.run(interface: interface, hardwareAddress: hardware, attempts: 2, waitMilliseconds: 500) }
        }
        switch outcome {
        case .success(let answer):
            let exchange = answer.outcome
            if let found = exchange.reply { return (found, nil, answer.dnsServers) }
            return (nil, "no Router Advertisement on \(interface) carried option 37 within 1.5 s"
                + (exchange.ignored > 0 ? " (\(exchange.ignored) other advertisements" + (exchange.lastProblem.map { "; the last refused: \($0)" } ?? "") + ")" : ""), answer.dnsServers)
        case .failure(let error):
            return (nil, "cannot solicit the routers: \(error)", [])
        }
    }

    /// Runs `connect` with the address to connect to for `host` — nil (the system's resolver
    /// looks it up) without a resolver or host, else the address the network's DNS gives —; a
    /// failed lookup or connection is the result's failure. Blocks: off the task pool.
    static func resolving<Value>(
        _ host: String?, with resolver: NetworkNameResolver?, _ connect: (String?) throws(SystemError) -> Value
    ) -> Result<Value, CaptivePortalError> {
        var address: String?
        if let resolver, let host {
            switch resolver.address(of: host) {
            case .success(let found): address = found
            case .failure(let error): return .failure(error)
            }
        }
        do throws(SystemError) { return .success(try connect(address)) } catch { return .failure(CaptivePortalError("\(error)")) }
    }

    /// GET the API with `Accept: application/captive+json` (RFC 8908 §5) on a connection out of
    /// `interface` carrying the detection mark (so it passes a kill switch, and never leaves by a
    /// tunnel); a 200 with that media type is parsed, anything else is a problem named.
    private func fetchAPI(_ url: URL, interface: String, resolver: NetworkNameResolver?) async throws(CaptivePortalError) -> CaptivePortalAPIStatus {
        let tls: ClientTLS?
        if let caFile {
            do { tls = try ClientTLS(caFile: caFile) } catch { throw CaptivePortalError("the captive portal CA file: \(error)") }
        } else {
            tls = nil
        }
        guard let host = url.host else { throw CaptivePortalError("the captive portal API's URL \(url.absoluteString) names no host") }
        let port = UInt16(url.port ?? 443)
        let connected = await BlockingWork.run {
            Self.resolving(host, with: resolver) { (address) throws(SystemError) in
                try InterfaceSocket.connectTCP(host: host, address: address, port: port, interface: interface, mark: TrafficGuard.detectionMark, timeoutMilliseconds: 5000)
            }
        }
        let descriptor: Int32
        switch connected {
        case .success(let fd): descriptor = fd
        case .failure(let error): throw CaptivePortalError("the captive portal API at \(url.absoluteString) cannot be reached on \(interface): \(error)")
        }
        let response: HTTPServerResponse
        do {
            response = try await HTTPOverConnectedSocket.exchange(
                descriptor: descriptor, url: url, headers: [("Accept", CaptivePortalAPIStatus.mediaType), ("Cache-Control", "no-cache")], tls: tls,
                bodyLimit: CaptivePortalAPIStatus.maximumSize, timeout: 5)
        } catch {
            throw CaptivePortalError("the captive portal API at \(url.absoluteString) did not answer: \(error)")
        }
        guard response.status == 200 else { throw CaptivePortalError("the captive portal API at \(url.absoluteString) answered \(response.status)") }
        let type = response.header("content-type")?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard type == CaptivePortalAPIStatus.mediaType else {
            throw CaptivePortalError("the captive portal API at \(url.absoluteString) answered \(type ?? "no media type"), not \(CaptivePortalAPIStatus.mediaType) (RFC 8908 §5)")
        }
        return try CaptivePortalAPIStatus.parse(response.body)
    }
}
