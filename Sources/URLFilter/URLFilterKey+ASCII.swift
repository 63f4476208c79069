/// The fast path of `URLFilterKey(parsing:)` for the common URL: printable ASCII throughout, a
/// host of letters, digits, '-', '_' and '.', no user part, no IPv6 literal. It works on bytes
/// and produces exactly what the general path produces for such input (the general path's NFC,
/// case mapping and Punycode are identities on it, apart from ASCII lower-casing); anything
/// else returns nil and the general path decides, errors included.
extension URLFilterKey {
    init(host: String, path: String, query: String?, fragment: String?) {
        self.host = host
        self.path = path
        self.query = query
        self.fragment = fragment
    }

    /// Where the parts of an ASCII URL are: the host (to be lower-cased), path, query and
    /// fragment, as byte ranges of the text.
    struct ASCIILayout {
        var host: Range<Int>
        var path: Range<Int>
        var query: Range<Int>?
        var fragment: Range<Int>?
    }

    /// The layout of `bytes`, or nil when the general path must decide.
    static func asciiLayout(_ bytes: UnsafeBufferPointer<UInt8>) -> ASCIILayout? {
        let count = bytes.count
        guard count > 0 else { return nil }
        for byte in bytes where byte < 0x21 || byte > 0x7E { return nil }
        var start = 0
        // A scheme: letters, digits, '+', '.', '-' before "://", starting with a letter.
        var index = 0
        while index < count, isSchemeByte(bytes[index]) { index += 1 }
        if index > 0, isLetter(bytes[0]), index + 2 < count, bytes[index] == 0x3A, bytes[index + 1] == 0x2F, bytes[index + 2] == 0x2F {
            start = index + 3
        } else if count >= 2, bytes[0] == 0x2F, bytes[1] == 0x2F {
            start = 2
        }
        var authorityEnd = start
        while authorityEnd < count, bytes[authorityEnd] != 0x2F, bytes[authorityEnd] != 0x3F, bytes[authorityEnd] != 0x23 { authorityEnd += 1 }
        var hostEnd = authorityEnd
        for i in start..<authorityEnd where bytes[i] == 0x40 || bytes[i] == 0x5B { return nil }  // '@', '['
        if let colon = (start..<authorityEnd).last(where: { bytes[$0] == 0x3A }) {
            for i in (colon + 1)..<authorityEnd where !(0x30...0x39).contains(bytes[i]) { return nil }
            hostEnd = colon
        }
        while hostEnd > start, bytes[hostEnd - 1] == 0x2E { hostEnd -= 1 }
        guard hostEnd > start, hostEnd - start <= 253 else { return nil }
        var labelLength = 0
        for i in start..<hostEnd {
            let byte = bytes[i]
            if byte == 0x2E {
                guard labelLength > 0 else { return nil }
                labelLength = 0
            } else {
                guard isLetter(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F else { return nil }
                labelLength += 1
                guard labelLength <= 63 else { return nil }
            }
        }
        var fragmentStart: Int?
        var queryStart: Int?
        var pathEnd = count
        for i in authorityEnd..<count where bytes[i] == 0x23 {
            fragmentStart = i + 1
            pathEnd = i
            break
        }
        for i in authorityEnd..<pathEnd where bytes[i] == 0x3F {
            queryStart = i + 1
            pathEnd = i
            break
        }
        let queryEnd = fragmentStart.map { $0 - 1 } ?? count
        return ASCIILayout(host: start..<hostEnd, path: authorityEnd..<pathEnd, query: queryStart.map { $0..<queryEnd }, fragment: fragmentStart.map { $0..<count })
    }

    static func parseASCII(_ text: String) -> URLFilterKey? {
        var copy = text
        return copy.withUTF8 { bytes -> URLFilterKey? in
            guard let layout = asciiLayout(bytes) else { return nil }
            func part(_ range: Range<Int>) -> Substring { Substring(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
            let host = String(decoding: bytes[layout.host].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
            return URLFilterKey(
                host: host, path: removeDotSegments(normalizePercentEncoding(part(layout.path))),
                query: layout.query.map { normalizePercentEncoding(part($0)) }, fragment: layout.fragment.map { normalizePercentEncoding(part($0)) })
        }
    }

    @inline(__always) static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
    @inline(__always) static func isSchemeByte(_ byte: UInt8) -> Bool {
        isLetter(byte) || (0x30...0x39).contains(byte) || byte == 0x2B || byte == 0x2E || byte == 0x2D
    }
}
