/// Going from one plan to the next on the same interface without tearing down: only what
/// differs is added or removed, so traffic on the routes both plans share keeps flowing while a
/// provider applies new settings (a reconnect, a roam, a changed route list).
extension NetworkPlan {
    /// The `ip` commands that turn `previous` into this plan, in order: the MTU, then everything
    /// new (addresses, routes, rules), then everything gone (rules, routes, addresses), so no
    /// destination both plans route is ever without a route. A plan for another interface or
    /// table replaces the previous one entirely (its teardown, then this plan's apply).
    public func changeCommands(from previous: NetworkPlan) -> [[String]] {
        guard previous.interface == interface, previous.table == table else {
            return previous.teardownCommands + applyCommands
        }
        var commands: [[String]] = []
        if previous.mtu != mtu { commands.append(["link", "set", "dev", interface, "mtu", "\(mtu)"]) }
        for address in addresses where !previous.addresses.contains(address) {
            commands.append(addressCommand("add", address))
        }
        for route in includedRoutes where !previous.includedRoutes.contains(route) {
            commands.append(routeCommand("replace", route))
        }
        for rule in rules where !previous.rules.contains(rule) { commands.append(rule.command(action: "add")) }
        for rule in previous.rules.reversed() where !rules.contains(rule) { commands.append(rule.command(action: "del")) }
        for route in previous.includedRoutes where !includedRoutes.contains(route) {
            commands.append(routeCommand("del", route))
        }
        for address in previous.addresses where !addresses.contains(address) {
            commands.append(addressCommand("del", address))
        }
        return commands
    }

    func addressCommand(_ action: String, _ address: IPPrefix) -> [String] {
        [address.isIPv6 ? "-6" : "-4", "address", action, address.description, "dev", interface] + (address.isIPv6 && action == "add" ? ["nodad"] : [])
    }

    func routeCommand(_ action: String, _ route: IPPrefix) -> [String] {
        [route.isIPv6 ? "-6" : "-4", "route", action, route.description, "dev", interface, "table", "\(table)"]
    }
}
