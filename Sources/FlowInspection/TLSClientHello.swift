import NetExtCore

/// Reads the server name (SNI) a TLS client asks for from the first bytes it sends: TLS records
/// (RFC 8446 §5.1) of type handshake carrying a ClientHello (§4.1.2) whose `server_name`
/// extension (RFC 6066 §3) names the host. A ClientHello may span several records and TCP
/// segments; `needMoreData` says so until it is complete.
public enum TLSClientHello {
    public enum Outcome: Sendable, Hashable {
        /// The ClientHello names this host (lowercased, without a trailing dot).
        case serverName(String)
        /// A complete ClientHello without a usable server name.
        case noServerName
        /// A ClientHello has begun but is not complete yet.
        case needMoreData
        /// These bytes are not a TLS ClientHello (or it is larger than `limit`).
        case notTLS
    }

    /// The largest ClientHello read (bytes of handshake message).
    public static let limit = 16 * 1024

    public static func parse(_ bytes: some Collection<UInt8>) -> Outcome {
        let data = Array(bytes)
        var handshake: [UInt8] = []
        var offset = 0
        var sawRecord = false
        // Gather the handshake bytes from consecutive handshake records.
        while offset < data.count {
            guard offset + 5 <= data.count else { return data[offset] == 22 ? .needMoreData : .notTLS }
            guard data[offset] == 22, data[offset + 1] == 3 else { return .notTLS }
            let length = Int(data[offset + 3]) << 8 | Int(data[offset + 4])
            guard length > 0, length <= 16_384 + 256 else { return .notTLS }
            sawRecord = true
            let available = min(length, data.count - offset - 5)
            handshake.append(contentsOf: data[(offset + 5)..<(offset + 5 + available)])
            offset += 5 + length
            if handshake.count >= 4 {
                let outcome = parse(handshake: handshake)
                if outcome != .needMoreData { return outcome }
            }
        }
        return sawRecord ? .needMoreData : .notTLS
    }

    /// The same for handshake bytes without the record layer (QUIC carries the ClientHello in
    /// CRYPTO frames, RFC 9001 §4.1): `bytes` are the stream from its first byte.
    public static func parse(handshake bytes: [UInt8]) -> Outcome {
        guard bytes.count >= 4 else { return bytes.isEmpty || bytes[0] == 1 ? .needMoreData : .notTLS }
        guard bytes[0] == 1 else { return .notTLS }
        let messageLength = Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard messageLength <= limit else { return .notTLS }
        guard bytes.count >= 4 + messageLength else { return .needMoreData }
        return serverName(inClientHello: bytes[4..<(4 + messageLength)])
    }

    private static func serverName(inClientHello body: ArraySlice<UInt8>) -> Outcome {
        var reader = ByteReader(body)
        guard reader.skip(2 + 32),                       // legacy_version, random
              let sessionID = reader.uint8(), reader.skip(Int(sessionID)),
              let suites = reader.uint16(), reader.skip(Int(suites)),
              let compression = reader.uint8(), reader.skip(Int(compression))
        else { return .notTLS }
        guard let extensionsLength = reader.uint16() else { return .noServerName }
        guard var extensions = reader.take(Int(extensionsLength)) else { return .notTLS }
        while !extensions.isAtEnd {
            guard let type = extensions.uint16(), let length = extensions.uint16(),
                  var content = extensions.take(Int(length)) else { return .notTLS }
            guard type == 0 else { continue }
            guard let listLength = content.uint16(), var list = content.take(Int(listLength)) else { return .notTLS }
            while !list.isAtEnd {
                guard let nameType = list.uint8(), let nameLength = list.uint16(),
                      let name = list.take(Int(nameLength)) else { return .notTLS }
                if nameType == 0, let host = HostName.normalized(bytes: name.remaining) {
                    return .serverName(host)
                }
            }
            return .noServerName
        }
        return .noServerName
    }
}

/// A bounds-checked reader over bytes, for parsers of untrusted input.
struct ByteReader {
    private(set) var remaining: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { remaining = bytes }

    var isAtEnd: Bool { remaining.isEmpty }

    mutating func uint8() -> UInt8? {
        guard let first = remaining.first else { return nil }
        remaining = remaining.dropFirst()
        return first
    }

    mutating func uint16() -> UInt16? {
        guard remaining.count >= 2 else { return nil }
        let value = UInt16(remaining[remaining.startIndex]) << 8 | UInt16(remaining[remaining.startIndex + 1])
        remaining = remaining.dropFirst(2)
        return value
    }

    mutating func skip(_ count: Int) -> Bool {
        guard remaining.count >= count else { return false }
        remaining = remaining.dropFirst(count)
        return true
    }

    mutating func take(_ count: Int) -> ByteReader? {
        guard remaining.count >= count else { return nil }
        let taken = remaining.prefix(count)
        remaining = remaining.dropFirst(count)
        return ByteReader(taken)
    }
}
