/// Unmarshals values from D-Bus's wire format in either byte order. Every fault — a length past
/// the end, non-zero padding, a boolean other than 0 or 1, a string without its NUL or not UTF-8,
/// nesting past 64 — is a `malformedMessage` naming the offset.
public struct DBusReader: Sendable {
    let bytes: [UInt8]
    /// Where the next value is read; offsets count from the message's first byte.
    public private(set) var offset: Int
    let end: Int
    let bigEndian: Bool

    public init(bytes: [UInt8], offset: Int = 0, end: Int? = nil, bigEndian: Bool = false) {
        self.bytes = bytes
        self.offset = offset
        self.end = min(end ?? bytes.count, bytes.count)
        self.bigEndian = bigEndian
    }

    /// Whether every byte up to the end has been read.
    public var isAtEnd: Bool { offset >= end }

    /// Reads one value of `type`.
    public mutating func read(_ type: DBusType) throws(DBusError) -> DBusValue {
        try read(type, depth: 0)
    }

    mutating func read(_ type: DBusType, depth: Int) throws(DBusError) -> DBusValue {
        guard depth <= 64 else { throw fault("values are nested more than 64 deep") }
        try skipPadding(to: type.alignment)
        switch type {
        case .byte: return .byte(try take(1)[0])
        case .boolean:
            let raw = try uint32()
            guard raw <= 1 else { throw fault("a boolean holds \(raw), not 0 or 1", at: offset - 4) }
            return .boolean(raw == 1)
        case .int16: return .int16(Int16(bitPattern: try integer(UInt16.self)))
        case .uint16: return .uint16(try integer(UInt16.self))
        case .int32: return .int32(Int32(bitPattern: try uint32()))
        case .uint32: return .uint32(try uint32())
        case .unixFD: return .unixFD(try uint32())
        case .int64: return .int64(Int64(bitPattern: try integer(UInt64.self)))
        case .uint64: return .uint64(try integer(UInt64.self))
        case .double: return .double(Double(bitPattern: try integer(UInt64.self)))
        case .string: return .string(try string(length: Int(try uint32())))
        case .objectPath:
            let start = offset
            let path = try string(length: Int(try uint32()))
            guard DBusNames.isObjectPath(path) else { throw fault("\"\(path)\" is not an object path", at: start) }
            return .objectPath(path)
        case .signature: return .signature(try signatureText())
        case .variant:
            let start = offset
            let signature = try signatureText()
            let inner: DBusType
            do { inner = try DBusType.parse(signature) } catch { throw fault("a variant's signature: \(error)", at: start) }
            return .variant(try read(inner, depth: depth + 1))
        case .array(let element):
            return .array(element: element, try arrayItems(alignment: element.alignment) { (reader: inout DBusReader) throws(DBusError) in
                try reader.read(element, depth: depth + 1)
            })
        case .dictionary(let keyType, let valueType):
            return .dictionary(key: keyType, value: valueType, try arrayItems(alignment: 8) { (reader: inout DBusReader) throws(DBusError) in
                try reader.skipPadding(to: 8)
                let key = try reader.read(keyType, depth: depth + 1)
                return DBusValue.DictionaryEntry(key, try reader.read(valueType, depth: depth + 1))
            })
        case .structure(let fields):
            var values: [DBusValue] = []
            for field in fields { values.append(try read(field, depth: depth + 1)) }
            return .structure(values)
        }
    }

    /// Skips to the next multiple of `alignment`; the bytes skipped must be zero.
    public mutating func skipPadding(to alignment: Int) throws(DBusError) {
        while offset % alignment != 0 {
            guard offset < end else { throw fault("the message ends inside padding") }
            guard bytes[offset] == 0 else { throw fault("a padding byte is \(bytes[offset]), not 0") }
            offset += 1
        }
    }

    private mutating func arrayItems<Item>(
        alignment: Int, _ item: (inout DBusReader) throws(DBusError) -> Item
    ) throws(DBusError) -> [Item] {
        let lengthAt = offset
        let length = Int(try uint32())
        guard length <= DBusWriter.maximumArrayLength else { throw fault("an array claims \(length) bytes, over 64 MiB", at: lengthAt) }
        try skipPadding(to: alignment)
        let stop = offset + length
        guard stop <= end else { throw fault("an array of \(length) bytes runs past the end", at: lengthAt) }
        var items: [Item] = []
        while offset < stop { items.append(try item(&self)) }
        guard offset == stop else { throw fault("an array's last element runs past its length", at: lengthAt) }
        return items
    }

    private mutating func signatureText() throws(DBusError) -> String {
        let length = Int(try take(1)[0])
        let start = offset
        let codes = try take(length + 1)
        guard codes[length] == 0 else { throw fault("a signature is not NUL-terminated", at: start + length) }
        let text = String(decoding: codes[..<length], as: UTF8.self)
        do { _ = try DBusType.parseList(text) } catch { throw fault("\(error)", at: start) }
        return text
    }

    private mutating func string(length: Int) throws(DBusError) -> String {
        let start = offset
        let raw = try take(length + 1)
        guard raw[length] == 0 else { throw fault("a string of \(length) bytes is not NUL-terminated", at: start + length) }
        let content = raw[..<length]
        guard !content.contains(0) else { throw fault("a string holds a NUL byte", at: start) }
        guard let text = String(validating: content, as: UTF8.self) else { throw fault("a string is not UTF-8", at: start) }
        return text
    }

    mutating func uint32() throws(DBusError) -> UInt32 { try integer(UInt32.self) }

    private mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(DBusError) -> T {
        let raw = try take(MemoryLayout<T>.size)
        var value: T = 0
        if bigEndian {
            for byte in raw { value = value << 8 | T(byte) }
        } else {
            for byte in raw.reversed() { value = value << 8 | T(byte) }
        }
        return value
    }

    /// The next `count` bytes, indexed from 0.
    private mutating func take(_ count: Int) throws(DBusError) -> [UInt8] {
        guard count >= 0, offset + count <= end else { throw fault("the message ends \(offset + count - end) bytes too soon") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    func fault(_ reason: String, at position: Int? = nil) -> DBusError {
        .malformedMessage(offset: position ?? offset, reason: reason)
    }
}
