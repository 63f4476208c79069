/// Reading values out of answers without a switch at every call site. Each accessor looks
/// through variants and answers nil when the value has another type.
extension DBusValue {
    /// The value a variant carries, or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// A string or object path.
    public var stringValue: String? {
        switch unwrapped {
        case .string(let text), .objectPath(let text), .signature(let text): text
        default: nil
        }
    }

    /// Any unsigned or non-negative integer, widened.
    public var uintValue: UInt64? {
        switch unwrapped {
        case .byte(let value): UInt64(value)
        case .uint16(let value): UInt64(value)
        case .uint32(let value): UInt64(value)
        case .uint64(let value): value
        case .int16(let value): value >= 0 ? UInt64(value) : nil
        case .int32(let value): value >= 0 ? UInt64(value) : nil
        case .int64(let value): value >= 0 ? UInt64(value) : nil
        default: nil
        }
    }

    /// A boolean.
    public var boolValue: Bool? {
        if case .boolean(let value) = unwrapped { return value }
        return nil
    }

    /// The elements of an array (a dictionary's entries are not elements).
    public var arrayValue: [DBusValue]? {
        if case .array(_, let elements) = unwrapped { return elements }
        return nil
    }

    /// A byte array's bytes (`ay`).
    public var bytesValue: [UInt8]? {
        guard case .array(.byte, let elements) = unwrapped else { return nil }
        return elements.compactMap { if case .byte(let byte) = $0 { byte } else { nil } }
    }

    /// A string-keyed dictionary, values as they are (variants kept).
    public var dictionaryValue: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.stringValue else { return nil }
            result[key] = entry.value
        }
        return result
    }
}
