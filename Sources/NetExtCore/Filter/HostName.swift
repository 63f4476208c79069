/// Host names as the content filter compares them: ASCII (an IDN arrives Punycoded on the wire),
/// lowercased, without a trailing dot, at most 253 characters of letters, digits, '-', '_' and '.'.
public enum HostName {
    /// The normalized form of `bytes`, or nil if they are not a host name.
    public static func normalized(bytes: some Collection<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.count <= 254 else { return nil }
        var characters: [UInt8] = []
        characters.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): characters.append(byte + 32)
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): characters.append(byte)
            default: return nil
            }
        }
        if characters.last == UInt8(ascii: ".") { characters.removeLast() }
        guard !characters.isEmpty, characters.count <= 253, characters.first != UInt8(ascii: ".") else { return nil }
        return String(decoding: characters, as: UTF8.self)
    }

    public static func normalized(_ text: String) -> String? { normalized(bytes: Array(text.utf8)) }

    /// Whether `host` is `domain` or one of its subdomains, on label boundaries
    /// (`a.example.com` is within `example.com`; `badexample.com` is not).
    public static func host(_ host: String, isWithin domain: String) -> Bool {
        host == domain || host.hasSuffix("." + domain)
    }
}
