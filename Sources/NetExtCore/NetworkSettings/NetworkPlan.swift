/// The system changes a tunnel's network settings amount to, computed without touching the
/// system: interface addresses and MTU, routes in a routing table of netextd's own, and the policy
/// rules that select that table. Split and full tunnels are the same plan with different routes;
/// rules ahead of the table keep the VPN server and excluded routes on the main table, so the
/// tunnel's own packets never loop into it.
public struct NetworkPlan: Sendable, Hashable {
    public var interface: String
    public var mtu: Int
    /// Interface addresses (host bits kept: `10.99.0.2/24`).
    public var addresses: [IPPrefix]
    /// The routing table that holds the tunnel's routes.
    public var table: Int
    /// Destinations routed into the tunnel (in `table`).
    public var includedRoutes: [IPPrefix]
    /// Policy rules, in priority order.
    public var rules: [PolicyRule]
    public var dns: DNSSettings?
    public var proxy: ProxySettings?

    /// A policy routing rule: packets to `destination` (all if nil) of `family`, and with the
    /// mark `fwmark` under ``FlowSteering/markMask`` if one is given (an app's flows, marked by
    /// netextd's flow steering), look up `table`.
    public struct PolicyRule: Sendable, Hashable {
        public enum Table: Sendable, Hashable { case main, tunnel(Int) }
        public var priority: Int
        public var isIPv6: Bool
        public var destination: IPPrefix?
        public var table: Table
        public var fwmark: UInt32?

        public init(priority: Int, isIPv6: Bool, destination: IPPrefix?, table: Table, fwmark: UInt32? = nil) {
            self.priority = priority
            self.isIPv6 = isIPv6
            self.destination = destination
            self.table = table
            self.fwmark = fwmark
        }
    }

    /// The overhead assumed when the provider gives neither an MTU nor `tunnelOverheadBytes`:
    /// an IPv6 outer header (40), UDP (8) and the NetExt transport header and tag (32).
    public static let defaultOverhead = 80

    /// Builds the plan; errors name the setting at fault.
    /// How a configuration's own flags change the provider's routes (Apple's
    /// `includeAllNetworks`, `excludeLocalNetworks`).
    public struct RoutingPolicy: Sendable, Hashable {
        /// Every destination goes into the tunnel; the provider's routes and excluded routes are
        /// ignored.
        public var includeAllNetworks = false
        /// With `includeAllNetworks`: these subnets (the machine's own networks) stay outside.
        public var localNetworks: [IPPrefix] = []
        /// Routing by source app: which flows (marked by the flow steering) the tunnel takes.
        public var appRouting: AppRouting?
        public init(includeAllNetworks: Bool = false, localNetworks: [IPPrefix] = [], appRouting: AppRouting? = nil) {
            self.includeAllNetworks = includeAllNetworks
            self.localNetworks = localNetworks
            self.appRouting = appRouting
        }
    }

    /// How marked app flows and the tunnel meet.
    public enum AppRouting: Sendable, Hashable {
        /// Per-app VPN: only flows with this mark enter the tunnel, to every destination (a
        /// default route per family the tunnel has an address in); nothing else does.
        case include(mark: UInt32)
        /// Flows with this mark bypass the tunnel (they look up the main table first).
        case exclude(mark: UInt32)
    }

    public static func make(
        settings: PacketTunnelNetworkSettings, interface: String, table: Int, rulePriority: Int, underlyingMTU: Int?,
        policy: RoutingPolicy = RoutingPolicy()
    ) throws(NetExtError) -> NetworkPlan {
        var addresses: [IPPrefix] = []
        var included: [IPPrefix] = []
        var excluded: [IPPrefix] = []
        if let v4 = settings.ipv4Settings {
            guard v4.addresses.count == v4.subnetMasks.count, !v4.addresses.isEmpty else {
                throw .invalid("ipv4Settings: addresses and subnetMasks must be non-empty and of equal length")
            }
            for (address, mask) in zip(v4.addresses, v4.subnetMasks) {
                guard let length = IPPrefix.length(ofSubnetMask: mask) else { throw .invalid("ipv4Settings.subnetMasks: '\(mask)' is not a subnet mask") }
                let prefix = try IPPrefix("\(address)/\(length)", allowHostBits: true)
                guard !prefix.isIPv6 else { throw .invalid("ipv4Settings.addresses: '\(address)' is not IPv4") }
                addresses.append(prefix)
            }
            included += try v4.includedRoutes.map { (route) throws(NetExtError) in try route.prefix() }
            excluded += try v4.excludedRoutes.map { (route) throws(NetExtError) in try route.prefix() }
        }
        if let v6 = settings.ipv6Settings {
            guard v6.addresses.count == v6.networkPrefixLengths.count, !v6.addresses.isEmpty else {
                throw .invalid("ipv6Settings: addresses and networkPrefixLengths must be non-empty and of equal length")
            }
            for (address, length) in zip(v6.addresses, v6.networkPrefixLengths) {
                let prefix = try IPPrefix("\(address)/\(length)", allowHostBits: true)
                guard prefix.isIPv6 else { throw .invalid("ipv6Settings.addresses: '\(address)' is not IPv6") }
                addresses.append(prefix)
            }
            included += try v6.includedRoutes.map { (route) throws(NetExtError) in try route.prefix() }
            excluded += try v6.excludedRoutes.map { (route) throws(NetExtError) in try route.prefix() }
        }
        if policy.includeAllNetworks {
            // All traffic: a default route per family the tunnel has an address in (the other
            // family is left to the traffic guard, which drops it); only local networks stay out.
            included = defaultRoutes(for: addresses)
            excluded = policy.localNetworks
        }
        if case .include = policy.appRouting {
            // The bound apps' every destination.
            included = defaultRoutes(for: addresses)
        }
        // An explicit MTU wins; otherwise the underlying interface's MTU minus the overhead.
        let mtu = settings.mtu ?? ((underlyingMTU ?? 1500) - (settings.tunnelOverheadBytes ?? defaultOverhead))
        guard (576...65_535).contains(mtu) else { throw .invalid("mtu: \(mtu) is outside 576...65535") }
        if settings.ipv6Settings != nil && mtu < 1280 { throw .invalid("mtu: \(mtu) is below IPv6's minimum of 1280") }

        var rules: [PolicyRule] = []
        let families = Set(addresses.map(\.isIPv6))
        for isIPv6 in families.sorted(by: { !$0 && $1 }) {
            // The VPN server itself always uses the main table.
            if let server = IPPrefix.parseAddress(settings.tunnelRemoteAddress), (server.count == 16) == isIPv6 {
                rules.append(PolicyRule(priority: rulePriority, isIPv6: isIPv6, destination: IPPrefix(address: server, length: server.count * 8), table: .main))
            }
            for route in excluded where route.isIPv6 == isIPv6 {
                rules.append(PolicyRule(priority: rulePriority + 1, isIPv6: isIPv6, destination: route, table: .main))
            }
            if case .exclude(let mark) = policy.appRouting {
                rules.append(PolicyRule(priority: rulePriority + 1, isIPv6: isIPv6, destination: nil, table: .main, fwmark: mark))
            }
            if included.contains(where: { $0.isIPv6 == isIPv6 }) {
                var mark: UInt32?
                if case .include(let included) = policy.appRouting { mark = included }
                rules.append(PolicyRule(priority: rulePriority + 2, isIPv6: isIPv6, destination: nil, table: .tunnel(table), fwmark: mark))
            }
        }
        for route in included where !families.contains(route.isIPv6) {
            throw .invalid("includedRoutes: \(route) needs \(route.isIPv6 ? "ipv6Settings" : "ipv4Settings") with an address")
        }
        return NetworkPlan(interface: interface, mtu: mtu, addresses: addresses, table: table, includedRoutes: included, rules: rules, dns: settings.dnsSettings, proxy: settings.proxySettings)
    }

    /// A default route per family the tunnel has an address in, IPv4 first.
    static func defaultRoutes(for addresses: [IPPrefix]) -> [IPPrefix] {
        Set(addresses.map(\.isIPv6)).sorted { !$0 && $1 }.map { isIPv6 in
            IPPrefix(address: [UInt8](repeating: 0, count: isIPv6 ? 16 : 4), length: 0)
        }
    }

    /// The `ip` commands that apply the plan, in order.
    public var applyCommands: [[String]] {
        var commands: [[String]] = [["link", "set", "dev", interface, "mtu", "\(mtu)"]]
        for address in addresses { commands.append(addressCommand("add", address)) }
        commands.append(["link", "set", "dev", interface, "up"])
        for route in includedRoutes { commands.append(routeCommand("replace", route)) }
        for rule in rules { commands.append(rule.command(action: "add")) }
        return commands
    }

    /// The `ip` commands that undo it (routes and addresses go with the interface itself).
    public var teardownCommands: [[String]] {
        rules.reversed().map { $0.command(action: "del") } + [["-4", "route", "flush", "table", "\(table)"], ["-6", "route", "flush", "table", "\(table)"]]
    }
}

extension NetworkPlan.PolicyRule {
    func command(action: String) -> [String] {
        var words = [isIPv6 ? "-6" : "-4", "rule", action, "priority", "\(priority)"]
        if let destination { words += ["to", destination.description] }
        if let fwmark { words += ["fwmark", FlowSteering.hex(fwmark) + "/" + FlowSteering.hex(FlowSteering.markMask)] }
        switch table {
        case .main: words += ["lookup", "main"]
        case .tunnel(let table): words += ["lookup", "\(table)"]
        }
        return words
    }
}

extension IPv4Route {
    func prefix() throws(NetExtError) -> IPPrefix {
        guard let length = IPPrefix.length(ofSubnetMask: subnetMask) else { throw .invalid("route \(destinationAddress): '\(subnetMask)' is not a subnet mask") }
        let prefix = try IPPrefix("\(destinationAddress)/\(length)", allowHostBits: true).network
        guard !prefix.isIPv6 else { throw .invalid("IPv4 route '\(destinationAddress)' is not IPv4") }
        return prefix
    }
}

extension IPv6Route {
    func prefix() throws(NetExtError) -> IPPrefix {
        let prefix = try IPPrefix("\(destinationAddress)/\(networkPrefixLength)", allowHostBits: true).network
        guard prefix.isIPv6 else { throw .invalid("IPv6 route '\(destinationAddress)' is not IPv6") }
        return prefix
    }
}

/// Where the kernel sends a packet, as the policy rules and tables of the active plans decide.
public enum PlannedRoute: Sendable, Hashable {
    /// Into this plan's tunnel interface.
    case tunnel(NetworkPlan)
    /// Out through the main table (the underlay).
    case main
}

extension NetworkPlan {
    /// The route a packet to `destination` (4 or 16 bytes) takes with `plans` applied: the
    /// rules of every plan in priority order (a rule to the main table ends the search; a rule to
    /// a tunnel's table ends it only if that table has a route to the destination, as `ip rule`
    /// falls through an empty lookup), then the main table. A rule with a mark applies only to
    /// a packet of that `mark` (an app's flow). For fakes that play the kernel.
    public static func route(to destination: [UInt8], through plans: [NetworkPlan], mark: UInt32 = 0) -> PlannedRoute {
        let host = IPPrefix(address: destination, length: destination.count * 8)
        let isIPv6 = destination.count == 16
        let rules = plans.flatMap { plan in plan.rules.map { (plan, $0) } }.filter { $0.1.isIPv6 == isIPv6 }.sorted { $0.1.priority < $1.1.priority }
        for (plan, rule) in rules where rule.destination.map({ $0.contains(host) }) ?? true {
            if let fwmark = rule.fwmark, mark & FlowSteering.markMask != fwmark { continue }
            switch rule.table {
            case .main: return .main
            case .tunnel:
                if plan.includedRoutes.contains(where: { $0.contains(host) }) { return .tunnel(plan) }
            }
        }
        return .main
    }
}
