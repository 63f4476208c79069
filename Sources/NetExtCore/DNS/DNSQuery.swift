
/// The part of a DNS query netextd's stub reads to choose where to forward it: the header's
/// identifier and flags and the first question (RFC 1035 §4.1.1 header, §4.1.2 question,
/// §4.1.4 compression). The message itself is forwarded unchanged.
public struct DNSQuery: Sendable, Hashable {
    public var id: UInt16
    /// The question's name in lowercase, without the trailing dot ("" for the root).
    public var name: String
    public var type: UInt16
    /// The question's class (1: IN).
    public var questionClass: UInt16
    /// Where the question section ends (header + first question).
    public var questionEnd: Int

    /// Parses a query message; refuses responses, truncated messages and malformed names with
    /// the offset at fault.
    public init(parsing message: [UInt8]) throws(DNSParseError) {
        guard message.count >= 12 else { throw .malformed(offset: message.count, "shorter than the 12-byte header") }
        id = UInt16(message[0]) << 8 | UInt16(message[1])
        guard message[2] & 0x80 == 0 else { throw .malformed(offset: 2, "a response, not a query") }
        let questions = UInt16(message[4]) << 8 | UInt16(message[5])
        guard questions >= 1 else { throw .malformed(offset: 4, "no question") }
        var offset = 12
        name = try Self.readName(message, at: &offset)
        guard offset + 4 <= message.count else { throw .malformed(offset: offset, "the question's type and class are missing") }
        type = UInt16(message[offset]) << 8 | UInt16(message[offset + 1])
        questionClass = UInt16(message[offset + 2]) << 8 | UInt16(message[offset + 3])
        questionEnd = offset + 4
    }

    /// Reads a possibly compressed name starting at `offset`, moving `offset` past it: its
    /// labels joined by dots, ASCII letters lowercased (RFC 4343 §3: DNS compares names without
    /// ASCII case, and only ASCII), other bytes as UTF-8 (invalid sequences replaced). One pass
    /// checks the name (``skipName(_:at:)``), a second writes it into a string made at its
    /// length, so a name costs one allocation at most (none up to 15 bytes).
    package static func readName(_ message: [UInt8], at offset: inout Int) throws(DNSParseError) -> String {
        var position = offset
        let length = try skipName(message, at: &offset)
        guard length > 0 else { return "" }
        return String(unsafeUninitializedCapacity: length) { text in
            var written = 0
            while true {
                let byte = message[position]
                if byte & 0xc0 == 0xc0 {
                    position = Int(byte & 0x3f) << 8 | Int(message[position + 1])
                    continue
                }
                if byte == 0 { return written }
                if written > 0 {
                    text[written] = 0x2e
                    written += 1
                }
                for index in (position + 1)...(position + Int(byte)) {
                    let character = message[index]
                    text[written] = character &- 0x41 < 26 ? character | 0x20 : character
                    written += 1
                }
                position += 1 + Int(byte)
            }
        }
    }

    /// Checks the possibly compressed name starting at `offset` (RFC 1035 §4.1.4: labels of at
    /// most 63 bytes, at most 255 bytes in all, pointers only backwards and at most 16 of them)
    /// and moves `offset` past it, without making its text; returns the text's length (labels
    /// and the dots between them).
    package static func skipName(_ message: [UInt8], at offset: inout Int) throws(DNSParseError) -> Int {
        var position = offset
        var jumped = false
        var jumps = 0
        var length = 0
        var labels = 0
        while true {
            guard position < message.count else { throw .malformed(offset: position, "the name runs past the end") }
            let byte = message[position]
            switch byte & 0xc0 {
            case 0x00:
                if byte == 0 {
                    if !jumped { offset = position + 1 }
                    return labels == 0 ? 0 : length - 1
                }
                let end = position + 1 + Int(byte)
                guard end <= message.count else { throw .malformed(offset: position, "a label runs past the end") }
                length += Int(byte) + 1
                labels += 1
                guard length <= 255 else { throw .malformed(offset: position, "the name is longer than 255 bytes") }
                position = end
            case 0xc0:
                guard position + 1 < message.count else { throw .malformed(offset: position, "a compression pointer is cut off") }
                jumps += 1
                guard jumps <= 16 else { throw .malformed(offset: position, "too many compression pointers (a loop?)") }
                let target = Int(byte & 0x3f) << 8 | Int(message[position + 1])
                guard target < position else { throw .malformed(offset: position, "a compression pointer points forward") }
                if !jumped { offset = position + 2 }
                jumped = true
                position = target
            default:
                throw .malformed(offset: position, "label type \(byte >> 6) is not defined")
            }
        }
    }

    /// A SERVFAIL answer to `message` (header and question kept, RFC 1035 §4.1.1 RCODE 2), for
    /// when no upstream server answered.
    public func serverFailure(for message: [UInt8]) -> [UInt8] {
        var reply = Array(message[..<questionEnd])
        reply[2] = 0x80 | (message[2] & 0x79)  // QR, keep opcode and RD
        reply[3] = 0x80 | 0x02  // RA, SERVFAIL
        reply[4] = 0
        reply[5] = 1
        for index in 6..<12 { reply[index] = 0 }
        return reply
    }
}

/// Why a DNS message was refused: the byte offset at fault and what was wrong there.
public enum DNSParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The message breaks RFC 1035's layout at `offset`.
    case malformed(offset: Int, String)

    public var description: String {
        switch self {
        case .malformed(let offset, let reason): "malformed DNS message at offset \(offset): \(reason)"
        }
    }
}

/// Where netextd's DNS stub sends a query: to the servers of the tunnel whose match domain is the
/// longest suffix of the name (on a label boundary), or else to the system's own servers.
public struct DNSRouting: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var owner: String
        public var matchDomains: [String]
        public var servers: [String]
        public init(owner: String, matchDomains: [String], servers: [String]) {
            self.owner = owner
            self.matchDomains = matchDomains.map { $0.lowercased().trimmingDots() }
            self.servers = servers
        }
    }

    public var entries: [Entry] = []
    /// The servers for everything else (the resolver file's before the stub took over).
    public var defaultServers: [String] = []
    /// Who answers everything else when it is not `defaultServers` in the clear: the system DNS
    /// settings (`DNSSettingsProtocol`) without match domains. nil: `defaultServers`.
    public var defaultOwner: String?

    /// Where one name goes: the servers, the match domain that chose them (nil: the default
    /// route), and the owner of the entry (or `defaultOwner`).
    public struct Route: Sendable, Hashable {
        public var servers: [String]
        public var matched: String?
        public var owner: String?
    }

    public init(entries: [Entry] = [], defaultServers: [String] = [], defaultOwner: String? = nil) {
        self.entries = entries
        self.defaultServers = defaultServers
        self.defaultOwner = defaultOwner
    }

    /// The servers for `name`, and the match domain that chose them (nil = default servers).
    public func servers(for name: String) -> (servers: [String], matched: String?) {
        let chosen = route(for: name)
        return (chosen.servers, chosen.matched)
    }

    /// The route for `name`: the entry with the longest match domain containing it (on a tie,
    /// the earlier entry: tunnels come before the system DNS settings), else the default.
    public func route(for name: String) -> Route {
        guard !entries.isEmpty else { return Route(servers: defaultServers, matched: nil, owner: defaultOwner) }
        let name = name.lowercased().trimmingDots()
        var best: Route?
        for entry in entries {
            for domain in entry.matchDomains where Self.name(name, isWithin: domain) {
                if best == nil || domain.count > best!.matched!.count { best = Route(servers: entry.servers, matched: domain, owner: entry.owner) }
            }
        }
        return best ?? Route(servers: defaultServers, matched: nil, owner: defaultOwner)
    }

    /// Whether `name` is `domain` or below it ("a.office.test" is within "office.test";
    /// "notoffice.test" is not). The empty domain matches nothing.
    public static func name(_ name: String, isWithin domain: String) -> Bool {
        guard !domain.isEmpty else { return false }
        return name == domain || name.hasSuffix("." + domain)
    }
}

extension String {
    func trimmingDots() -> String {
        var text = Substring(self)
        while text.hasPrefix(".") { text = text.dropFirst() }
        while text.hasSuffix(".") { text = text.dropLast() }
        return String(text)
    }
}
