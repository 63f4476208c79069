/// How a ``NetworkRule`` is written as nftables matches: outbound flows in the output `route`
/// chain (the remote end is the packet's destination), inbound ones in the `prerouting` proxy
/// chain (the remote end is its source).
extension NetworkRule {
    /// The nft match of its protocol: `meta l4proto tcp`.
    func nftProtocolMatch() -> String {
        switch transportProtocol {
        case .tcp: "meta l4proto tcp"
        case .udp: "meta l4proto udp"
        case .any: "meta l4proto { tcp, udp }"
        }
    }

    /// The nft matches of its packets in `direction` (`.outbound` or `.inbound`): one per address
    /// family it names (both when it names none), with its protocol and ports. A host rule's
    /// remote addresses are the sets `hostSets` names (IPv4, IPv6).
    func nftMatches(_ direction: TrafficDirection = .outbound, hostSets: (ipv4: String, ipv6: String)? = nil) -> [String] {
        let inbound = direction == .inbound
        let (remote, local) = inbound ? ("saddr", "daddr") : ("daddr", "saddr")
        let (remotePort, localPortField) = inbound ? ("sport", "dport") : ("dport", "sport")
        let ports = (destinationPort.map { " th \(remotePort) \($0)" } ?? "") + (self.localPort.map { " th \(localPortField) \($0)" } ?? "")
        let transport = nftProtocolMatch() + ports
        if isHostRule {
            guard let hostSets else { return [] }
            return ["ip daddr @\(hostSets.ipv4) \(transport)", "ip6 daddr @\(hostSets.ipv6) \(transport)"]
        }
        let families: [Bool] = if let family = (destinationNetwork ?? localNetwork)?.isIPv6 { [family] } else { [false, true] }
        return families.map { isIPv6 in
            let ip = isIPv6 ? "ip6" : "ip"
            var parts: [String] = []
            if let network = destinationNetwork, network.length > 0 { parts.append("\(ip) \(remote) \(network)") }
            if let network = localNetwork, network.length > 0 { parts.append("\(ip) \(local) \(network)") }
            if parts.isEmpty { parts.append("meta nfproto \(isIPv6 ? "ipv6" : "ipv4")") }
            return (parts + [transport]).joined(separator: " ")
        }
    }
}
