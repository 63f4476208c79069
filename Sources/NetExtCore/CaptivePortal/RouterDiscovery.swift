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

    /// The Recursive DNS Server option's type in Router Advertisements (RFC 8106 §5.1).
    public static let recursiveDNSServerOption: UInt8 = 25

    /// The options of an ICMPv6 Router Advertisement (type 134, RFC 4861 §4.2: options from
    /// offset 16, each a type, a length in units of 8 bytes and its value), in order, each with
    /// its offset and its bytes (type and length included). A message that is no advertisement,
    /// an option cut short, of length 0 (RFC 4861 §4.6) or running past the end is refused,
    /// naming the offset.
    public static func advertisementOptions(_ message: [UInt8]) throws(CaptivePortalError) -> [(type: UInt8, offset: Int, bytes: ArraySlice<UInt8>)] {
        guard message.count >= 16, message[0] == advertisementType else {
            throw CaptivePortalError("not a Router Advertisement: \(message.count) bytes, type \(message.first.map(String.init) ?? "none") (RFC 4861 §4.2)")
        }
        var options: [(type: UInt8, offset: Int, bytes: ArraySlice<UInt8>)] = []
        var offset = 16
        while offset < message.count {
            guard offset + 2 <= message.count else { throw CaptivePortalError("the Router Advertisement's option at offset \(offset) is cut short") }
            let type = message[offset]
            let length = Int(message[offset + 1]) * 8
            guard length > 0 else { throw CaptivePortalError("the Router Advertisement's option \(type) at offset \(offset) has length 0 (RFC 4861 §4.6)") }
            guard offset + length <= message.count else {
                throw CaptivePortalError("the Router Advertisement's option \(type) at offset \(offset) runs past the end (\(length) bytes)")
            }
            options.append((type, offset, message[offset..<(offset + length)]))
            offset += length
        }
        return options
    }

    /// The DNS servers a Router Advertisement names in its RDNSS options (RFC 8106 §5.1: type 25,
    /// a length of 3, 5, 7… units of 8 bytes, 2 reserved bytes, a 4-byte lifetime in seconds, then
    /// 16-byte addresses), as text, in the advertisement's order. An option with lifetime 0 says
    /// its servers must no longer be used (§5.1): left out. A malformed option list is refused,
    /// naming the offset; the advertisement's own checks are `advertisementProblem`'s.
    public static func recursiveDNSServers(in message: [UInt8]) throws(CaptivePortalError) -> [String] {
        var servers: [String] = []
        for option in try advertisementOptions(message) where option.type == recursiveDNSServerOption {
            let units = option.bytes.count / 8
            guard units >= 3, units % 2 == 1 else {
                throw CaptivePortalError("the Router Advertisement's RDNSS option at offset \(option.offset) has length \(units); 3, 5, 7… (RFC 8106 §5.1)")
            }
            let start = option.bytes.startIndex
            let lifetime = option.bytes[(start + 4)..<(start + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard lifetime > 0 else { continue }
            for address in stride(from: start + 8, to: option.bytes.endIndex, by: 16) {
                servers.append(IPPrefix.format(Array(option.bytes[address..<(address + 16)])))
            }
        }
        return servers
    }
}
