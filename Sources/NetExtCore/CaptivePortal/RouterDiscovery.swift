/// The two ICMPv6 router discovery messages a captive portal look-up uses (RFC 4861 §4.1, §4.2).
public enum RouterDiscovery {
    /// ICMPv6 types (RFC 4861 §4.1, §4.2).
    public static let solicitationType: UInt8 = 133
    public static let advertisementType: UInt8 = 134

    /// A Router Solicitation: type 133, code 0, the checksum left to the kernel (a raw ICMPv6
    /// socket fills it in, RFC 3542 §3.1), four reserved bytes, and the Source Link-Layer Address
    /// option (type 1, RFC 4861 §4.6.1) when the interface has a 6-byte hardware address.
    public static func solicitation(hardwareAddress: [UInt8]) -> [UInt8] {
        var message: [UInt8] = [solicitationType, 0, 0, 0, 0, 0, 0, 0]
        if hardwareAddress.count == 6 { message += [1, 1] + hardwareAddress }
        return message
    }

    /// RFC 4861 §6.1.2's checks on an advertisement before anything of it is used: a link-local
    /// source (fe80::/10), hop limit 255 (so it cannot have come from beyond the link), ICMPv6
    /// code 0, at least 16 bytes. The reason it fails, nil when it passes.
    public static func advertisementProblem(_ message: [UInt8], source: [UInt8], hopLimit: Int?) -> String? {
        guard source.count == 16, source[0] == 0xfe, source[1] & 0xc0 == 0x80 else {
            return "a Router Advertisement from a source that is not link-local (RFC 4861 §6.1.2)"
        }
        guard let hopLimit else { return "a Router Advertisement whose hop limit is unknown" }
        guard hopLimit == 255 else { return "a Router Advertisement with hop limit \(hopLimit), not 255: from beyond the link (RFC 4861 §6.1.2)" }
        guard message.count >= 16, message[0] == advertisementType else {
            return "not a Router Advertisement: \(message.count) bytes, type \(message.first.map(String.init) ?? "none")"
        }
        guard message[1] == 0 else { return "a Router Advertisement with ICMPv6 code \(message[1]), not 0 (RFC 4861 §6.1.2)" }
        return nil
    }
}
