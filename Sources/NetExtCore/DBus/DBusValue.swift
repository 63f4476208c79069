/// One D-Bus value with its type. Arrays and dictionaries carry their element types so that an
/// empty one still has a signature.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// An index into the message's passed file descriptors.
    case unixFD(UInt32)
    case variant(DBusValue)
    case array(element: DBusType, [DBusValue])
    case dictionary(key: DBusType, value: DBusType, [DictionaryEntry])
    case structure([DBusValue])

    /// One key and value of a dictionary, in wire order.
    public struct DictionaryEntry: Sendable, Hashable {
        public var key: DBusValue
        public var value: DBusValue
        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The type of this value.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .variant: .variant
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        }
    }

    /// A byte array (`ay`), as SSIDs and hardware addresses travel.
    public static func bytes(_ bytes: [UInt8]) -> DBusValue { .array(element: .byte, bytes.map { .byte($0) }) }

    /// An array of strings (`as`).
    public static func strings(_ strings: [String]) -> DBusValue { .array(element: .string, strings.map { .string($0) }) }

    /// A dictionary of strings to variants (`a{sv}`), the shape of property maps and settings.
    public static func properties(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, entries.map { DictionaryEntry(.string($0.0), .variant($0.1)) })
    }
}
