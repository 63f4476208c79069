/// An HTTP/1.1 response as a connectivity check reads it (RFC 9112): the status, the `Location`
/// header and the body (by Content-Length, chunked, or to the connection's close). Anything the
/// network sends is refused with the offset at fault, never trusted.
public struct ProbeResponse: Sendable, Hashable {
    public var status: Int
    public var location: String?
    public var body: [UInt8]

    public init(status: Int, location: String? = nil, body: [UInt8] = []) {
        self.status = status
        self.location = location
        self.body = body
    }

    /// The most of a response read: a probe's real answer is a few bytes, a portal's page a few KiB.
    public static let maximumSize = 64 << 10

    /// Parses a whole response as read until the server closed the connection (or the limit).
    public static func parse(_ bytes: [UInt8]) throws(CaptivePortalError) -> ProbeResponse {
        let crlf: [UInt8] = [13, 10]
        guard let headEnd = firstIndex(of: crlf + crlf, in: bytes, from: 0) else {
            throw CaptivePortalError("the connectivity check's answer has no complete header (\(bytes.count) bytes, no blank line)")
        }
        let lines = split(bytes[..<headEnd], on: crlf)
        guard let statusLine = lines.first, statusLine.count >= 12, statusLine.starts(with: Array("HTTP/1.".utf8)), statusLine[statusLine.startIndex + 8] == 32 else {
            throw CaptivePortalError("the connectivity check's answer does not start with an HTTP/1 status line (RFC 9112 §4)")
        }
        let codeBytes = statusLine[(statusLine.startIndex + 9)..<(statusLine.startIndex + 12)]
        guard codeBytes.allSatisfy({ (48...57).contains($0) }), let status = Int(String(decoding: codeBytes, as: UTF8.self)), (100...599).contains(status) else {
            throw CaptivePortalError("the connectivity check's answer has no three-digit status code at offset 9 (RFC 9112 §4)")
        }
        var location: String?
        var contentLength: Int?
        var chunked = false
        var offset = statusLine.count + 2
        for line in lines.dropFirst() {
            defer { offset += line.count + 2 }
            guard let colon = line.firstIndex(of: 58), colon > line.startIndex else {
                throw CaptivePortalError("the connectivity check's answer has a header line without a name at offset \(offset)")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces
            switch name {
            case "location": location = value
            case "content-length":
                guard let length = Int(value), length >= 0 else {
                    throw CaptivePortalError("the connectivity check's answer has a Content-Length that is not a number at offset \(offset)")
                }
                contentLength = length
            case "transfer-encoding": chunked = value.lowercased().hasSuffix("chunked")
            default: break
            }
        }
        let rest = Array(bytes[(headEnd + 4)...])
        let body: [UInt8]
        if chunked {
            body = try dechunk(rest, startingAt: headEnd + 4)
        } else if let contentLength {
            body = Array(rest.prefix(contentLength))
        } else {
            body = rest
        }
        return ProbeResponse(status: status, location: location, body: body)
    }

    /// A chunked body (RFC 9112 §7.1), as far as it was read; a chunk size that is not hex is refused.
    private static func dechunk(_ bytes: [UInt8], startingAt base: Int) throws(CaptivePortalError) -> [UInt8] {
        var body: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            guard let lineEnd = firstIndex(of: [13, 10], in: bytes, from: offset) else { break }
            let sizeText = String(decoding: bytes[offset..<lineEnd].prefix { $0 != 59 }, as: UTF8.self).trimmingSpaces  // ';' starts extensions
            // Hex digits only: Int(_:radix:) would also take a sign ("-5"), a negative length.
            guard !sizeText.isEmpty, sizeText.count <= 8, sizeText.allSatisfy(\.isHexDigit), let size = Int(sizeText, radix: 16) else {
                throw CaptivePortalError("the connectivity check's answer has a chunk size that is not hexadecimal at offset \(base + offset) (RFC 9112 §7.1)")
            }
            if size == 0 { break }
            let start = lineEnd + 2
            body += bytes[min(start, bytes.count)..<min(start + size, bytes.count)]
            offset = start + size + 2
        }
        return body
    }

    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        for index in start...(bytes.count - needle.count) where bytes[index] == needle[0] && bytes[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }

    private static func split(_ bytes: ArraySlice<UInt8>, on separator: [UInt8]) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var index = bytes.startIndex
        while index + separator.count <= bytes.endIndex {
            if bytes[index..<(index + separator.count)].elementsEqual(separator) {
                parts.append(bytes[start..<index])
                index += separator.count
                start = index
            } else {
                index += 1
            }
        }
        parts.append(bytes[start..<bytes.endIndex])
        return parts
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
        while scalars.last == " " || scalars.last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
