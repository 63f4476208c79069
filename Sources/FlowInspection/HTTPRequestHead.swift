import NetExtCore

/// The start of a cleartext HTTP/1.x request (RFC 9112 §3 request line, §3.2 Host): enough to
/// name the URL a flow asks for. Reads at most `limit` bytes of head.
public struct HTTPRequestHead: Sendable, Hashable {
    public var method: String
    /// The request target as sent (origin form `/path?q`, or absolute form through a proxy).
    public var target: String
    /// The Host header, normalized; nil if absent or not a host name.
    public var host: String?
    /// The port of the Host header, if it named one.
    public var port: UInt16?

    public enum Outcome: Sendable, Hashable {
        case request(HTTPRequestHead)
        case needMoreData
        case notHTTP
    }

    public static let limit = 8 * 1024

    /// The URL the request asks for: `http://host[:port]target`, or the absolute target itself.
    public var url: String? {
        if target.hasPrefix("http://") || target.hasPrefix("https://") { return target }
        guard let host, target.hasPrefix("/") else { return nil }
        let portPart = port.map { $0 == 80 ? "" : ":\($0)" } ?? ""
        return "http://\(host)\(portPart)\(target)"
    }

    public static func parse(_ bytes: some Collection<UInt8>) -> Outcome {
        let data = Array(bytes.prefix(limit))
        // The request line must start with a method token (RFC 9110 §5.6.2) and a space.
        guard let space = data.firstIndex(of: UInt8(ascii: " ")) else {
            return data.count < 16 && data.allSatisfy(isTokenCharacter) ? .needMoreData : .notHTTP
        }
        guard space > 0, space <= 16, data[..<space].allSatisfy(isTokenCharacter) else { return .notHTTP }
        guard let headEnd = find([13, 10, 13, 10], in: data) else {
            return data.count >= limit ? .notHTTP : .needMoreData
        }
        let lines = data[..<headEnd].split(separator: 10, omittingEmptySubsequences: false).map { line in
            line.last == 13 ? line.dropLast() : line
        }
        let requestLine = lines[0].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2].starts(with: Array("HTTP/1.".utf8)),
              !requestLine[1].isEmpty, requestLine[1].allSatisfy({ $0 > 32 && $0 < 127 })
        else { return .notHTTP }
        var head = HTTPRequestHead(
            method: String(decoding: requestLine[0], as: UTF8.self),
            target: String(decoding: requestLine[1], as: UTF8.self), host: nil, port: nil)
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).lowercased()
            guard name == "host" else { continue }
            var value = line[(colon + 1)...]
            while value.first == 32 || value.first == 9 { value = value.dropFirst() }
            while value.last == 32 || value.last == 9 { value = value.dropLast() }
            var hostPart = value
            if let portColon = value.lastIndex(of: UInt8(ascii: ":")), value.first != UInt8(ascii: "[") {
                head.port = UInt16(String(decoding: value[(portColon + 1)...], as: UTF8.self))
                hostPart = value[value.startIndex..<portColon]
            }
            head.host = HostName.normalized(bytes: hostPart)
            break
        }
        return .request(head)
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<(start + needle.count)]) == needle { return start }
        }
        return nil
    }
}
