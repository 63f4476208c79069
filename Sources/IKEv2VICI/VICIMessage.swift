import NetExtCore

/// A message of strongSwan's VICI protocol (the control interface of its IKE daemon, charon):
/// an ordered tree of named values, lists of values and sections.
///
/// Wire format (strongSwan, `src/libcharon/plugins/vici/README.md`, "Message format"): a
/// sequence of elements, each a type byte followed by its fields — names are an 8-bit length and
/// that many bytes, values a 16-bit big-endian length and that many bytes:
///
/// | type | element        | fields      |
/// |------|----------------|-------------|
/// | 1    | section start  | name        |
/// | 2    | section end    | —           |
/// | 3    | key/value      | name, value |
/// | 4    | list start     | name        |
/// | 5    | list item      | value       |
/// | 6    | list end       | —           |
public struct VICIMessage: Sendable, Hashable {
    public enum Value: Sendable, Hashable {
        case value([UInt8])
        case list([[UInt8]])
        case section(VICIMessage)
    }

    public struct Entry: Sendable, Hashable {
        public var name: String
        public var value: Value

        public init(_ name: String, _ value: Value) {
            self.name = name
            self.value = value
        }

        /// A key with a text value.
        public static func text(_ name: String, _ text: String) -> Entry { Entry(name, .value(Array(text.utf8))) }
        /// A list of text values.
        public static func list(_ name: String, _ items: [String]) -> Entry { Entry(name, .list(items.map { Array($0.utf8) })) }
        /// A nested section.
        public static func section(_ name: String, _ entries: [Entry]) -> Entry { Entry(name, .section(VICIMessage(entries))) }
    }

    public var entries: [Entry]

    public init(_ entries: [Entry] = []) { self.entries = entries }

    /// How deep sections may nest in a message read from the wire.
    public static let maximumDepth = 32

    // MARK: Reading values

    /// The value of key `name` as text (UTF-8), if present.
    public subscript(text name: String) -> String? {
        for entry in entries where entry.name == name {
            if case .value(let bytes) = entry.value { return String(decoding: bytes, as: UTF8.self) }
        }
        return nil
    }

    /// The items of list `name` as text, if present.
    public subscript(list name: String) -> [String]? {
        for entry in entries where entry.name == name {
            if case .list(let items) = entry.value { return items.map { String(decoding: $0, as: UTF8.self) } }
        }
        return nil
    }

    /// Section `name`, if present.
    public subscript(section name: String) -> VICIMessage? {
        for entry in entries where entry.name == name {
            if case .section(let section) = entry.value { return section }
        }
        return nil
    }

    /// The sections of this message, in order, with their names.
    public var sections: [(name: String, message: VICIMessage)] {
        entries.compactMap { entry in
            if case .section(let section) = entry.value { return (entry.name, section) }
            return nil
        }
    }

    // MARK: Encoding

    enum ElementType: UInt8 {
        case sectionStart = 1, sectionEnd, keyValue, listStart, listItem, listEnd
    }

    /// The message's bytes; names longer than 255 bytes or values longer than 65,535 are refused.
    public func encoded() throws(VICIError) -> [UInt8] {
        var bytes: [UInt8] = []
        try append(to: &bytes)
        return bytes
    }

    func append(to bytes: inout [UInt8]) throws(VICIError) {
        for entry in entries {
            switch entry.value {
            case .value(let value):
                bytes.append(ElementType.keyValue.rawValue)
                try Self.appendName(entry.name, to: &bytes)
                try Self.appendValue(value, named: entry.name, to: &bytes)
            case .list(let items):
                bytes.append(ElementType.listStart.rawValue)
                try Self.appendName(entry.name, to: &bytes)
                for item in items {
                    bytes.append(ElementType.listItem.rawValue)
                    try Self.appendValue(item, named: entry.name, to: &bytes)
                }
                bytes.append(ElementType.listEnd.rawValue)
            case .section(let section):
                bytes.append(ElementType.sectionStart.rawValue)
                try Self.appendName(entry.name, to: &bytes)
                try section.append(to: &bytes)
                bytes.append(ElementType.sectionEnd.rawValue)
            }
        }
    }

    private static func appendName(_ name: String, to bytes: inout [UInt8]) throws(VICIError) {
        let utf8 = Array(name.utf8)
        guard !utf8.isEmpty, utf8.count <= 255 else { throw VICIError("name '\(name.prefix(40))' must be 1 to 255 bytes", offset: bytes.count) }
        bytes.append(UInt8(utf8.count))
        bytes += utf8
    }

    private static func appendValue(_ value: [UInt8], named name: String, to bytes: inout [UInt8]) throws(VICIError) {
        guard value.count <= 0xFFFF else { throw VICIError("value of '\(name)' is \(value.count) bytes; at most 65535", offset: bytes.count) }
        bytes.append(UInt8(value.count >> 8))
        bytes.append(UInt8(value.count & 0xFF))
        bytes += value
    }

    // MARK: Decoding

    /// Reads a whole message; errors name the offset at fault (from the start of `bytes`).
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(VICIError) -> VICIMessage {
        var reader = Reader(bytes: bytes)
        let message = try reader.readSection(depth: 0)
        if reader.position < bytes.endIndex {
            throw VICIError("section end without a section", offset: reader.position - bytes.startIndex)
        }
        return message
    }

    private struct Reader {
        let bytes: ArraySlice<UInt8>
        var position: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            position = bytes.startIndex
        }

        var offset: Int { position - bytes.startIndex }

        mutating func byte(_ what: String) throws(VICIError) -> UInt8 {
            guard position < bytes.endIndex else { throw VICIError("truncated: \(what) missing", offset: offset) }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func name() throws(VICIError) -> String {
            let length = Int(try byte("name length"))
            guard length > 0 else { throw VICIError("empty name", offset: offset - 1) }
            guard bytes.endIndex - position >= length else { throw VICIError("truncated: name of \(length) bytes", offset: offset) }
            guard let name = String(validating: bytes[position..<(position + length)], as: UTF8.self) else {
                throw VICIError("name is not UTF-8", offset: offset)
            }
            position += length
            return name
        }

        mutating func value() throws(VICIError) -> [UInt8] {
            let length = Int(try byte("value length")) << 8 | Int(try byte("value length"))
            guard bytes.endIndex - position >= length else { throw VICIError("truncated: value of \(length) bytes", offset: offset) }
            defer { position += length }
            return Array(bytes[position..<(position + length)])
        }

        /// Reads elements until the matching section end (depth > 0) or the end of the bytes.
        mutating func readSection(depth: Int) throws(VICIError) -> VICIMessage {
            var entries: [Entry] = []
            while position < bytes.endIndex {
                let at = offset
                guard let type = ElementType(rawValue: bytes[position]) else {
                    throw VICIError("unknown element type \(bytes[position])", offset: at)
                }
                position += 1
                switch type {
                case .keyValue:
                    let name = try name()
                    entries.append(Entry(name, .value(try value())))
                case .listStart:
                    let name = try name()
                    var items: [[UInt8]] = []
                    while true {
                        let itemAt = offset
                        let next = try byte("list end")
                        if next == ElementType.listEnd.rawValue { break }
                        guard next == ElementType.listItem.rawValue else { throw VICIError("element type \(next) inside list '\(name)'", offset: itemAt) }
                        items.append(try value())
                    }
                    entries.append(Entry(name, .list(items)))
                case .sectionStart:
                    guard depth < VICIMessage.maximumDepth else { throw VICIError("sections nested deeper than \(VICIMessage.maximumDepth)", offset: at) }
                    let name = try name()
                    let section = try readSection(depth: depth + 1)
                    entries.append(Entry(name, .section(section)))
                case .sectionEnd:
                    guard depth > 0 else {
                        position -= 1
                        return VICIMessage(entries)
                    }
                    return VICIMessage(entries)
                case .listItem, .listEnd:
                    throw VICIError("list element outside a list", offset: at)
                }
            }
            guard depth == 0 else { throw VICIError("truncated: section not closed", offset: offset) }
            return VICIMessage(entries)
        }
    }
}

/// A VICI message or packet that cannot be encoded or read.
public struct VICIError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    /// The byte offset at fault.
    public var offset: Int

    public init(_ reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "VICI: \(reason) (at byte \(offset))" }
}
