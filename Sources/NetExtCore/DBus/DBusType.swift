/// A D-Bus type, parsed from a type signature (D-Bus Specification, "Type System").
///
/// Basic types are one ASCII code each; `a` is an array of the single complete type after it,
/// `(…)` a structure of one or more complete types, `a{KV}` a dictionary (an array of dict
/// entries whose key is a basic type), `v` a variant carrying its own signature.
public indirect enum DBusType: Sendable, Hashable {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])

    /// The signature code of this type (`a{sv}` for a dictionary of strings to variants).
    public var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.signature
        case .dictionary(let key, let value): "a{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        }
    }

    /// The boundary a value of this type starts on in a message ("Marshaling (Wire Format)").
    public var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .string, .objectPath, .unixFD, .array, .dictionary: 4
        case .int64, .uint64, .double, .structure: 8
        }
    }

    /// Whether this is a basic type (the only kind a dictionary key may be).
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// The complete types of `signature`, in order; throws naming the offset at fault. The
    /// specification's limits hold: at most 255 bytes, arrays and structures each nested at
    /// most 32 deep.
    public static func parseList(_ signature: String) throws(DBusError) -> [DBusType] {
        let bytes = Array(signature.utf8)
        guard bytes.count <= 255 else { throw .badSignature(signature, reason: "it is longer than 255 bytes") }
        var parser = SignatureParser(bytes: bytes, text: signature)
        var types: [DBusType] = []
        while parser.offset < bytes.count { types.append(try parser.completeType(arrayDepth: 0, structDepth: 0)) }
        return types
    }

    /// The one complete type `signature` spells; throws unless it is exactly one.
    public static func parse(_ signature: String) throws(DBusError) -> DBusType {
        let types = try parseList(signature)
        guard types.count == 1 else { throw .badSignature(signature, reason: "it holds \(types.count) complete types, not one") }
        return types[0]
    }
}

/// Reads one complete type at a time from a signature's bytes.
private struct SignatureParser {
    let bytes: [UInt8]
    let text: String
    var offset = 0

    mutating func completeType(arrayDepth: Int, structDepth: Int) throws(DBusError) -> DBusType {
        guard offset < bytes.count else { throw fault("it ends where a type should follow") }
        let code = bytes[offset]
        offset += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < 32 else { throw fault("arrays are nested more than 32 deep") }
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "{") {
                offset += 1
                let key = try completeType(arrayDepth: arrayDepth + 1, structDepth: structDepth)
                guard key.isBasic else { throw fault("a dictionary key must be a basic type, not \(key.signature)") }
                let value = try completeType(arrayDepth: arrayDepth + 1, structDepth: structDepth)
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "}") else {
                    throw fault("a dictionary entry holds exactly one key and one value")
                }
                offset += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try completeType(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < 32 else { throw fault("structures are nested more than 32 deep") }
            var fields: [DBusType] = []
            while offset < bytes.count, bytes[offset] != UInt8(ascii: ")") {
                fields.append(try completeType(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
            guard offset < bytes.count else { throw fault("a structure is not closed") }
            guard !fields.isEmpty else { throw fault("a structure is empty") }
            offset += 1
            return .structure(fields)
        default:
            offset -= 1
            throw fault("'\(String(decoding: [code], as: UTF8.self))' is not a type code")
        }
    }

    func fault(_ reason: String) -> DBusError {
        .badSignature(text, reason: "at offset \(offset) \(reason)")
    }
}
