/// Marshals values in D-Bus's little-endian wire format (D-Bus Specification, "Marshaling (Wire
/// Format)"): each value starts on its type's alignment, counted from the message's first byte.
public struct DBusWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// The specification's limit on an array's marshaled length.
    public static let maximumArrayLength = 64 << 20

    public init(startingWith bytes: [UInt8] = []) {
        self.bytes = bytes
    }

    /// Zero bytes up to the next multiple of `alignment`.
    public mutating func pad(to alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    /// Writes `value`; throws if it breaks a rule of its type (an object path, a signature, a
    /// string with a NUL byte, an element of the wrong type, an array over 64 MiB).
    public mutating func write(_ value: DBusValue) throws(DBusError) {
        pad(to: value.type.alignment)
        switch value {
        case .byte(let byte): bytes.append(byte)
        case .boolean(let flag): append(UInt32(flag ? 1 : 0))
        case .int16(let number): append(UInt16(bitPattern: number))
        case .uint16(let number): append(number)
        case .int32(let number): append(UInt32(bitPattern: number))
        case .uint32(let number), .unixFD(let number): append(number)
        case .int64(let number): append(UInt64(bitPattern: number))
        case .uint64(let number): append(number)
        case .double(let number): append(number.bitPattern)
        case .string(let text): try appendString(text)
        case .objectPath(let path):
            guard DBusNames.isObjectPath(path) else { throw .typeMismatch(expected: "an object path", found: "\"\(path)\"") }
            try appendString(path)
        case .signature(let signature):
            _ = try DBusType.parseList(signature)
            appendSignature(signature)
        case .variant(let inner):
            appendSignature(inner.type.signature)
            try write(inner)
        case .array(let element, let elements):
            try appendArray(elementAlignment: element.alignment) { (writer: inout DBusWriter) throws(DBusError) in
                for item in elements {
                    guard item.type == element else { throw .typeMismatch(expected: element.signature, found: item.type.signature) }
                    try writer.write(item)
                }
            }
        case .dictionary(let keyType, let valueType, let entries):
            try appendArray(elementAlignment: 8) { (writer: inout DBusWriter) throws(DBusError) in
                for entry in entries {
                    guard entry.key.type == keyType else { throw .typeMismatch(expected: keyType.signature, found: entry.key.type.signature) }
                    guard entry.value.type == valueType else {
                        throw .typeMismatch(expected: valueType.signature, found: entry.value.type.signature)
                    }
                    writer.pad(to: 8)
                    try writer.write(entry.key)
                    try writer.write(entry.value)
                }
            }
        case .structure(let fields):
            for field in fields { try write(field) }
        }
    }

    /// A signature (`g`): one length byte, the codes, a NUL.
    mutating func appendSignature(_ signature: String) {
        let codes = Array(signature.utf8)
        bytes.append(UInt8(codes.count))
        bytes += codes
        bytes.append(0)
    }

    private mutating func appendString(_ text: String) throws(DBusError) {
        let utf8 = Array(text.utf8)
        guard !utf8.contains(0) else { throw .typeMismatch(expected: "a string without NUL bytes", found: "a string with one") }
        append(UInt32(utf8.count))
        bytes += utf8
        bytes.append(0)
    }

    private mutating func appendArray(
        elementAlignment: Int, _ elements: (inout DBusWriter) throws(DBusError) -> Void
    ) throws(DBusError) {
        let lengthAt = bytes.count
        append(UInt32(0))
        pad(to: elementAlignment)
        let start = bytes.count
        try elements(&self)
        let length = bytes.count - start
        guard length <= Self.maximumArrayLength else {
            throw .typeMismatch(expected: "an array of at most 64 MiB", found: "one of \(length) bytes")
        }
        withUnsafeBytes(of: UInt32(length).littleEndian) { bytes.replaceSubrange(lengthAt..<lengthAt + 4, with: $0) }
    }

    private mutating func append<T: FixedWidthInteger>(_ number: T) {
        withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
    }
}
