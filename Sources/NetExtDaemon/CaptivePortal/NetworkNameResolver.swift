import Foundation
import NetExtCore
import NetExtLinux

/// Looks up the host names detection connects to — the captive portal API's and the
/// connectivity check's — with the network's own DNS servers (the DHCP server's option 6), over
/// UDP out of the interface being checked and carrying `TrafficGuard.detectionMark`, as the rest
/// of detection goes: so a name resolves with a kill switch on (which holds the machine's
/// resolver), behind a full tunnel (whose DNS knows nothing of the hotspot's portal), and never
/// leaves by another interface. A numeric host is used as it is. With no servers (the network's
/// DHCP said none, or detection learnt nothing over DHCPv4) the caller falls back to the
/// system's resolver.
struct NetworkNameResolver: Sendable {
    /// The network's DNS servers, dotted IPv4, in the DHCP server's order.
    let servers: [String]
    let interface: String
    /// How long each server has to answer (two tries each).
    var timeoutMilliseconds = 1500
    /// The servers' port (53; tests use another).
    var port: UInt16 = 53

    /// The address to connect to for `host` (a numeric host as it is), or why there is none.
    func address(of host: String) -> Result<String, CaptivePortalError> {
        if Self.isNumeric(host) { return .success(host) }
        var problems: [String] = []
        for server in servers {
            for attempt in 0..<2 {
                let query: DNSAddressQuery
                do throws(DNSParseError) {
                    query = try DNSAddressQuery(name: host, id: UInt16.random(in: 0...UInt16.max))
                } catch {
                    return .failure(CaptivePortalError("\(host) cannot be looked up: \(error)"))
                }
                let answer: [UInt8]?
                do throws(SystemError) {
                    answer = try InterfaceSocket.exchangeDatagram(
                        query.message, server: server, port: port, interface: interface, mark: TrafficGuard.detectionMark, timeoutMilliseconds: timeoutMilliseconds)
                } catch {
                    problems.append("\(server): \(error)")
                    break
                }
                guard let answer else {
                    if attempt == 1 { problems.append("\(server) did not answer within \(timeoutMilliseconds) ms, twice") }
                    continue
                }
                do throws(DNSParseError) {
                    let addresses = try query.addresses(in: answer)
                    guard let first = addresses.first else {
                        problems.append("\(server) knows no IPv4 address for it")
                        break
                    }
                    return .success(first.map(String.init).joined(separator: "."))
                } catch {
                    problems.append("\(server): \(error)")
                    break
                }
            }
        }
        return .failure(CaptivePortalError(
            "\(host) could not be looked up with the network's DNS server\(servers.count == 1 ? "" : "s") on \(interface): \(problems.joined(separator: "; "))"))
    }

    /// An IPv4 or IPv6 literal (a URL's host keeps IPv6 in brackets).
    static func isNumeric(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }
}
