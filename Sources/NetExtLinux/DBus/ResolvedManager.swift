import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// systemd-resolved's D-Bus API, the part a VPN uses to give a link its DNS: the
/// `org.freedesktop.resolve1.Manager` methods at `/org/freedesktop/resolve1` (systemd's
/// org.freedesktop.resolve1(5): "SetLinkDNS()", "SetLinkDomains()", "SetLinkDefaultRoute()",
/// "RevertLink()"). What a link is given is the link's until `revert` or the link goes.
public struct ResolvedManager: Sendable {
    public static let busName = "org.freedesktop.resolve1"
    static let path = "/org/freedesktop/resolve1"
    static let interface = "org.freedesktop.resolve1.Manager"
    /// The interface of the object resolved keeps for each link (`GetLink`).
    static let linkInterface = "org.freedesktop.resolve1.Link"

    /// One of a link's domains: `routingOnly` ones (`~corp.example`; `~.` is the root) only
    /// route names to the link's servers; the others are search domains too.
    public struct Domain: Sendable, Hashable, CustomStringConvertible {
        public var name: String
        public var routingOnly: Bool
        public init(_ name: String, routingOnly: Bool) {
            self.name = name
            self.routingOnly = routingOnly
        }
        public var description: String { routingOnly ? "~" + name : name }
    }

    private let bus: DBusConnection

    public init(bus: DBusConnection) { self.bus = bus }

    /// Whether systemd-resolved runs: its name has an owner on this bus.
    public static func isRunning(on bus: DBusConnection) -> Bool {
        (try? bus.nameHasOwner(busName)) == true
    }

    /// The link's DNS servers (`SetLinkDNS`, `ia(iay)`: address family and address bytes).
    /// Addresses that are not IP addresses are refused, naming them.
    public func setServers(_ servers: [String], link: Int32) throws(DBusError) {
        var entries: [DBusValue] = []
        for server in servers {
            guard let (family, bytes) = Self.addressBytes(server) else { throw .typeMismatch(expected: "an IP address", found: "\"\(server)\"") }
            entries.append(.structure([.int32(family), .bytes(bytes)]))
        }
        try call("SetLinkDNS", [.int32(link), .array(element: .structure([.int32, .array(.byte)]), entries)])
    }

    /// The link's search and routing domains (`SetLinkDomains`, `ia(sb)`).
    public func setDomains(_ domains: [Domain], link: Int32) throws(DBusError) {
        let entries = domains.map { DBusValue.structure([.string($0.name), .boolean($0.routingOnly)]) }
        try call("SetLinkDomains", [.int32(link), .array(element: .structure([.string, .boolean]), entries)])
    }

    /// Whether names no routing domain matches go to the link's servers (`SetLinkDefaultRoute`).
    public func setDefaultRoute(_ isDefault: Bool, link: Int32) throws(DBusError) {
        try call("SetLinkDefaultRoute", [.int32(link), .boolean(isDefault)])
    }

    /// A per-link mode (`SetLinkLLMNR`, `SetLinkMulticastDNS`, `SetLinkDNSOverTLS`, `SetLinkDNSSEC`:
    /// "yes", "no", …; an empty string means the global setting).
    public func setMode(_ member: String, _ mode: String, link: Int32) throws(DBusError) {
        try call(member, [.int32(link), .string(mode)])
    }

    /// Whether resolved sends the link names no routing domain matches: the `DefaultRoute`
    /// property of the link's object (`GetLink` finds it).
    public func isDefaultRoute(link: Int32) throws(DBusError) -> Bool {
        let body = try bus.call(.methodCall(destination: Self.busName, path: Self.path, interface: Self.interface, member: "GetLink", body: [.int32(link)]))
        guard body.count == 1, case .objectPath(let object) = body[0] else {
            throw .unexpectedReply(member: "GetLink", expected: "o", found: body.map(\.type.signature).joined())
        }
        let value = try bus.property("DefaultRoute", of: Self.linkInterface, at: object, on: Self.busName)
        guard let isDefault = value.boolValue else { throw .unexpectedReply(member: "Get DefaultRoute", expected: "b", found: value.type.signature) }
        return isDefault
    }

    /// Forgets everything given to the link (`RevertLink`).
    public func revert(link: Int32) throws(DBusError) {
        try call("RevertLink", [.int32(link)])
    }

    /// The address family and network-order bytes of an IPv4 or IPv6 address.
    public static func addressBytes(_ text: String) -> (family: Int32, bytes: [UInt8])? {
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 { return (AF_INET, v4) }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, text, &v6) == 1 { return (AF_INET6, v6) }
        return nil
    }

    private func call(_ member: String, _ body: [DBusValue]) throws(DBusError) {
        _ = try bus.call(.methodCall(destination: Self.busName, path: Self.path, interface: Self.interface, member: member, body: body))
    }
}
