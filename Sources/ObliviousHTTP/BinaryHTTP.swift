import VariableLengthIntegers

/// Known-length Binary HTTP messages (RFC 9292 §3): the form Oblivious HTTP encapsulates.
/// Field names are lower-case on the wire (§3.5 requires lower case for HTTP/2+ semantics).
public struct BinaryHTTPRequest: Sendable, Equatable {
    public var method: String
    public var scheme: String
    public var authority: String
    public var path: String
    public var headers: [(String, String)]
    public var content: [UInt8]

    public init(method: String, scheme: String, authority: String, path: String, headers: [(String, String)] = [], content: [UInt8] = []) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.headers = headers
        self.content = content
    }

    public static func == (a: BinaryHTTPRequest, b: BinaryHTTPRequest) -> Bool {
        a.method == b.method && a.scheme == b.scheme && a.authority == b.authority && a.path == b.path
            && a.headers.elementsEqual(b.headers, by: ==) && a.content == b.content
    }

    /// Framing indicator 0, request control data, header section, content, empty trailers.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        QUICVarint.append(0, to: &out)
        for part in [method, scheme, authority, path] { BinaryHTTPCoding.appendString(part, to: &out) }
        BinaryHTTPCoding.appendFields(headers, to: &out)
        BinaryHTTPCoding.appendBytes(content, to: &out)
        BinaryHTTPCoding.appendFields([], to: &out)
        return out
    }

    /// Decodes a known-length request; truncated trailers/content are allowed as §3.8 permits,
    /// trailing bytes other than zero padding are refused.
    public init(decoding bytes: [UInt8]) throws(ObliviousHTTPError) {
        var offset = 0
        guard let framing = QUICVarint.read(bytes, &offset) else { throw .truncated(what: "framing indicator", offset: offset) }
        guard framing == 0 else { throw .unsupportedFraming(framing) }
        method = try BinaryHTTPCoding.readString(bytes, &offset, "method")
        scheme = try BinaryHTTPCoding.readString(bytes, &offset, "scheme")
        authority = try BinaryHTTPCoding.readString(bytes, &offset, "authority")
        path = try BinaryHTTPCoding.readString(bytes, &offset, "path")
        headers = offset < bytes.count ? try BinaryHTTPCoding.readFields(bytes, &offset, "header section") : []
        content = offset < bytes.count ? try BinaryHTTPCoding.readBytes(bytes, &offset, "content") : []
        if offset < bytes.count { _ = try BinaryHTTPCoding.readFields(bytes, &offset, "trailer section") }
        try BinaryHTTPCoding.checkPadding(bytes, offset)
    }
}

/// A known-length Binary HTTP response (final status only; informational responses are skipped
/// when decoding).
public struct BinaryHTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [(String, String)]
    public var content: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], content: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.content = content
    }

    public static func == (a: BinaryHTTPResponse, b: BinaryHTTPResponse) -> Bool {
        a.status == b.status && a.headers.elementsEqual(b.headers, by: ==) && a.content == b.content
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        QUICVarint.append(1, to: &out)
        QUICVarint.append(UInt64(status), to: &out)
        BinaryHTTPCoding.appendFields(headers, to: &out)
        BinaryHTTPCoding.appendBytes(content, to: &out)
        BinaryHTTPCoding.appendFields([], to: &out)
        return out
    }

    public init(decoding bytes: [UInt8]) throws(ObliviousHTTPError) {
        var offset = 0
        guard let framing = QUICVarint.read(bytes, &offset) else { throw .truncated(what: "framing indicator", offset: offset) }
        guard framing == 1 else { throw .unsupportedFraming(framing) }
        var status: UInt64 = 0
        repeat {
            guard let code = QUICVarint.read(bytes, &offset) else { throw .truncated(what: "status", offset: offset) }
            status = code
            if (100..<200).contains(code) { _ = try BinaryHTTPCoding.readFields(bytes, &offset, "informational fields") }
        } while (100..<200).contains(status)
        guard (200..<600).contains(status) else { throw .truncated(what: "final status \(status)", offset: offset) }
        self.status = Int(status)
        headers = offset < bytes.count ? try BinaryHTTPCoding.readFields(bytes, &offset, "header section") : []
        content = offset < bytes.count ? try BinaryHTTPCoding.readBytes(bytes, &offset, "content") : []
        if offset < bytes.count { _ = try BinaryHTTPCoding.readFields(bytes, &offset, "trailer section") }
        try BinaryHTTPCoding.checkPadding(bytes, offset)
    }
}

enum BinaryHTTPCoding {
    /// Upper bound on any length read from the wire (the message itself bounds it too).
    static func appendBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        QUICVarint.append(UInt64(bytes.count), to: &out)
        out += bytes
    }

    static func appendString(_ text: String, to out: inout [UInt8]) { appendBytes(Array(text.utf8), to: &out) }

    static func appendFields(_ fields: [(String, String)], to out: inout [UInt8]) {
        var section: [UInt8] = []
        for (name, value) in fields {
            appendString(name.lowercased(), to: &section)
            appendString(value, to: &section)
        }
        appendBytes(section, to: &out)
    }

    static func readBytes(_ bytes: [UInt8], _ offset: inout Int, _ what: String) throws(ObliviousHTTPError) -> [UInt8] {
        let start = offset
        guard let length = QUICVarint.read(bytes, &offset), length <= UInt64(bytes.count - offset) else {
            throw .truncated(what: what, offset: start)
        }
        defer { offset += Int(length) }
        return Array(bytes[offset..<(offset + Int(length))])
    }

    static func readString(_ bytes: [UInt8], _ offset: inout Int, _ what: String) throws(ObliviousHTTPError) -> String {
        String(decoding: try readBytes(bytes, &offset, what), as: UTF8.self)
    }

    static func readFields(_ bytes: [UInt8], _ offset: inout Int, _ what: String) throws(ObliviousHTTPError) -> [(String, String)] {
        let section = try readBytes(bytes, &offset, what)
        var inner = 0
        var fields: [(String, String)] = []
        while inner < section.count {
            let name = try readString(section, &inner, "\(what) field name")
            let value = try readString(section, &inner, "\(what) field value")
            fields.append((name, value))
        }
        return fields
    }

    static func checkPadding(_ bytes: [UInt8], _ offset: Int) throws(ObliviousHTTPError) {
        if let extra = bytes[offset...].firstIndex(where: { $0 != 0 }) { throw .trailingBytes(offset: extra) }
    }
}
