import Foundation
import NetExtCore
import NetExtLinux

/// Looks up the host names detection connects to — the captive portal API's and the
/// connectivity check's — with the network's own DNS servers (the DHCP server's option 6; on a
/// network that says nothing over DHCPv4, DHCPv6's option 23 or the routers' RDNSS options), over
/// UDP out of the interface being checked and carrying `TrafficGuard.detectionMark`, as the rest
/// of detection goes: so a name resolves with a kill switch on (which holds the machine's
/// resolver), behind a full tunnel (whose DNS knows nothing of the hotspot's portal), and never
/// leaves by another interface. A numeric host is used as it is. Each server is asked for the
/// name's IPv4 address, then its IPv6 one (the other way round on an interface without IPv4).
/// With no servers the caller falls back to the system's resolver.
struct NetworkNameResolver: Sendable {
    /// The network's DNS servers, IPv4 or IPv6 literals, in the order the network gave them.
    let servers: [String]
    let interface: String
    /// Ask for AAAA records first (the interface has no IPv4 address).
    var preferIPv6 = false
    /// How long each server has to answer (two tries each).
    var timeoutMilliseconds = 1500
    /// The servers' port (53; tests use another).
    var port: UInt16 = 53

    /// What one server said of one record type.
    private enum Lookup {
        case found(String)
        /// The name exists, without addresses of this type.
        case noAddress
        /// The server failed (the next one is asked).
        case failed(String)
        /// The name itself cannot be asked.
        case invalid(String)
    }

    /// The address to connect to for `host` (a numeric host as it is), or why there is none.
    func address(of host: String) -> Result<String, CaptivePortalError> {
        if Self.isNumeric(host) { return .success(host) }
        var problems: [String] = []
        let types: [DNSAddressQuery.RecordType] = preferIPv6 ? [.aaaa, .a] : [.a, .aaaa]
        for server in servers {
            var withoutAddress = 0
            asking: for type in types {
                switch lookup(host, type: type, server: server) {
                case .found(let address): return .success(address)
                case .noAddress: withoutAddress += 1
                case .invalid(let problem): return .failure(CaptivePortalError(problem))
                case .failed(let problem):
                    problems.append(problem)
                    break asking  // this server is no use: the next one
                }
            }
            if withoutAddress == types.count { problems.append("\(server) knows no IPv4 or IPv6 address for it") }
        }
        return .failure(CaptivePortalError(
            "\(host) could not be looked up with the network's DNS server\(servers.count == 1 ? "" : "s") on \(interface): \(problems.joined(separator: "; "))"))
    }

    /// One record type asked of one server, twice at most when it stays silent.
    private func lookup(_ host: String, type: DNSAddressQuery.RecordType, server: String) -> Lookup {
        for attempt in 0..<2 {
            let query: DNSAddressQuery
            do throws(DNSParseError) {
                query = try DNSAddressQuery(name: host, type: type, id: UInt16.random(in: 0...UInt16.max))
            } catch {
                return .invalid("\(host) cannot be looked up: \(error)")
            }
            let answer: [UInt8]?
            do throws(SystemError) {
                answer = try InterfaceSocket.exchangeDatagram(
                    query.message, server: server, port: port, interface: interface, mark: TrafficGuard.detectionMark, timeoutMilliseconds: timeoutMilliseconds)
            } catch {
                return .failed("\(server): \(error)")
            }
            guard let answer else {
                if attempt == 1 { return .failed("\(server) did not answer within \(timeoutMilliseconds) ms, twice") }
                continue
            }
            do throws(DNSParseError) {
                guard let first = try query.addresses(in: answer).first else { return .noAddress }
                return .found(IPPrefix.format(first))
            } catch {
                return .failed("\(server): \(error)")
            }
        }
        return .failed("\(server) did not answer")
    }

    /// An IPv4 or IPv6 literal (a URL's host keeps IPv6 in brackets).
    static func isNumeric(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }
}
