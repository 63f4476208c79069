import NetExtCore

/// A packet of strongSwan's VICI protocol: a type, a name for the named types, and a message.
///
/// Transport (strongSwan, `src/libcharon/plugins/vici/README.md`, "Transport protocol" and
/// "Packet layer"): each packet travels behind a 32-bit big-endian length of what follows (at most
/// 512 KiB); then one type byte, then — for requests, event (un)registrations and events — an
/// 8-bit name length and the name, then the message's elements.
public struct VICIPacket: Sendable, Hashable {
    public enum Kind: UInt8, Sendable, Hashable {
        case commandRequest = 0
        case commandResponse = 1
        case commandUnknown = 2
        case eventRegister = 3
        case eventUnregister = 4
        case eventConfirm = 5
        case eventUnknown = 6
        case event = 7

        /// Whether packets of this kind carry a name.
        public var isNamed: Bool {
            switch self {
            case .commandRequest, .eventRegister, .eventUnregister, .event: true
            case .commandResponse, .commandUnknown, .eventConfirm, .eventUnknown: false
            }
        }
    }

    public var kind: Kind
    /// The command or event name (named kinds only).
    public var name: String?
    public var message: VICIMessage

    /// The largest packet either side sends (the length field's limit in charon).
    public static let maximumLength = 512 * 1024

    public init(_ kind: Kind, name: String? = nil, message: VICIMessage = VICIMessage()) {
        self.kind = kind
        self.name = name
        self.message = message
    }

    /// The packet with its 4-byte length in front, ready to write.
    public func framed() throws(VICIError) -> [UInt8] {
        var body: [UInt8] = [kind.rawValue]
        if kind.isNamed {
            let utf8 = Array((name ?? "").utf8)
            guard !utf8.isEmpty, utf8.count <= 255 else { throw VICIError("a \(kind) packet needs a name of 1 to 255 bytes", offset: 1) }
            body.append(UInt8(utf8.count))
            body += utf8
        }
        try message.append(to: &body)
        guard body.count <= Self.maximumLength else { throw VICIError("packet of \(body.count) bytes is above \(Self.maximumLength)", offset: 0) }
        let length = UInt32(body.count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + body
    }

    /// The length a 4-byte header announces, refused above `maximumLength` or when empty.
    public static func length(ofHeader header: [UInt8]) throws(VICIError) -> Int {
        guard header.count == 4 else { throw VICIError("truncated: length header", offset: header.count) }
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length > 0 else { throw VICIError("empty packet", offset: 0) }
        guard length <= maximumLength else { throw VICIError("packet length \(length) is above \(maximumLength)", offset: 0) }
        return length
    }

    /// Reads a packet's body (what follows the length header); offsets count from the body's start.
    public static func decode(body: ArraySlice<UInt8>) throws(VICIError) -> VICIPacket {
        guard let first = body.first else { throw VICIError("truncated: packet type", offset: 0) }
        guard let kind = Kind(rawValue: first) else { throw VICIError("unknown packet type \(first)", offset: 0) }
        var position = body.startIndex + 1
        var name: String?
        if kind.isNamed {
            guard position < body.endIndex else { throw VICIError("truncated: name length", offset: 1) }
            let length = Int(body[position])
            position += 1
            guard length > 0, body.endIndex - position >= length else { throw VICIError("packet name of \(length) bytes is empty or truncated", offset: 1) }
            guard let text = String(validating: body[position..<(position + length)], as: UTF8.self) else { throw VICIError("packet name is not UTF-8", offset: 2) }
            name = text
            position += length
        }
        let message: VICIMessage
        do {
            message = try VICIMessage.decode(body[position...])
        } catch {
            throw VICIError(error.reason, offset: error.offset + position - body.startIndex)
        }
        return VICIPacket(kind, name: name, message: message)
    }
}
