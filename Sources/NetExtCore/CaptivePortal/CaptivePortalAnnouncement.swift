import Foundation

/// What a network says about its captive portal when a client joins (RFC 8910): the URI of its
/// captive portal API (RFC 8908), or that there is no portal.
public enum CaptivePortalAnnouncement: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `urn:ietf:params:capport:unrestricted` (RFC 8910 §2): no portal here.
    case unrestricted
    /// The captive portal API's URI; HTTPS (RFC 8908 §4.1: the API is reached over TLS).
    case api(URL)

    public static let unrestrictedURN = "urn:ietf:params:capport:unrestricted"
    /// DHCPv4 option Captive-Portal (RFC 8910 §2.1).
    public static let dhcpv4Option: UInt8 = 114
    /// IPv6 Router Advertisement option Captive-Portal (RFC 8910 §2.3).
    public static let routerAdvertisementOption: UInt8 = 37

    public var description: String {
        switch self {
        case .unrestricted: Self.unrestrictedURN
        case .api(let url): url.absoluteString
        }
    }

    /// Reads an announced URI (`source` names where it came from, for the error).
    public static func parse<Bytes: Collection<UInt8>>(uri bytes: Bytes, source: String) throws(CaptivePortalError) -> CaptivePortalAnnouncement {
        guard !bytes.isEmpty else { throw CaptivePortalError("\(source) is empty (RFC 8910 §2)") }
        guard bytes.count <= 2048 else { throw CaptivePortalError("\(source) is \(bytes.count) bytes long; at most 2048 are taken") }
        // A URI is printable ASCII (RFC 3986 §2); a NUL or control byte inside is refused.
        if let bad = bytes.firstIndex(where: { $0 < 0x21 || $0 > 0x7e }) {
            throw CaptivePortalError("\(source) holds byte 0x\(String(bytes[bad], radix: 16)) at offset \(bytes.distance(from: bytes.startIndex, to: bad)), which no URI contains (RFC 3986 §2)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if text.lowercased() == unrestrictedURN { return .unrestricted }
        return .api(try CaptivePortalURL.parse(text, what: source, httpsOnly: true))
    }

    /// The announcement in a DHCPv4 reply (option 114), or nil when it has none.
    public static func from(_ message: DHCPv4Message) throws(CaptivePortalError) -> CaptivePortalAnnouncement? {
        guard let value = message.options[dhcpv4Option] else { return nil }
        return try parse(uri: value, source: "DHCP option 114 (captive portal)")
    }

    /// The announcement in an ICMPv6 Router Advertisement (type 134, RFC 4861 §4.2; options from
    /// offset 16, lengths in units of 8 bytes), or nil when it has none. The option's URI is padded
    /// with NULs to its length (RFC 8910 §2.3); the padding is dropped.
    public static func fromRouterAdvertisement(_ message: [UInt8]) throws(CaptivePortalError) -> CaptivePortalAnnouncement? {
        guard let option = try RouterDiscovery.advertisementOptions(message).first(where: { $0.type == routerAdvertisementOption }) else { return nil }
        var uri = option.bytes.dropFirst(2)
        while uri.last == 0 { uri.removeLast() }
        return try parse(uri: uri, source: "Router Advertisement option 37 (captive portal)")
    }
}
