import Foundation

/// Typed reads from a property-list dictionary that name the payload and key at fault.
struct PlistReader {
    let dictionary: [String: Any]
    /// Where this dictionary sits, e.g. `payload 'com.example.vpn' (com.apple.vpn.managed)`.
    let context: String
    /// The key path of this dictionary inside the payload, e.g. `VPN.`.
    let prefix: String

    init(_ dictionary: [String: Any], context: String, prefix: String = "") {
        self.dictionary = dictionary
        self.context = context
        self.prefix = prefix
    }

    func fail(_ key: String, _ message: String) -> NetExtError {
        .invalid("\(context): key '\(prefix)\(key)': \(message)")
    }

    private func mismatch(_ key: String, expected: String, found value: Any) -> NetExtError {
        fail(key, "expected \(expected), found \(PlistValueKind(value).rawValue)")
    }

    func has(_ key: String) -> Bool { dictionary[key] != nil }

    func string(_ key: String) throws(NetExtError) -> String? {
        guard let value = dictionary[key] else { return nil }
        guard PlistValueKind(value) == .string, let string = value as? String else {
            throw mismatch(key, expected: "a string", found: value)
        }
        return string
    }

    func requiredString(_ key: String) throws(NetExtError) -> String {
        guard let value = try string(key) else { throw fail(key, "is required") }
        if value.isEmpty { throw fail(key, "must not be empty") }
        return value
    }

    /// A flag written either as `<true/>`/`<false/>` or as the integers 1/0 Apple's schema uses.
    func flag(_ key: String) throws(NetExtError) -> Bool? {
        guard let value = dictionary[key] else { return nil }
        switch PlistValueKind(value) {
        case .boolean: return (value as? Bool) ?? false
        case .integer:
            let number = (value as? NSNumber)?.intValue ?? -1
            guard number == 0 || number == 1 else { throw fail(key, "expected 0 or 1, found \(number)") }
            return number == 1
        default: throw mismatch(key, expected: "a boolean or 0/1", found: value)
        }
    }

    /// A `<data>` value.
    func data(_ key: String) throws(NetExtError) -> Data? {
        guard let value = dictionary[key] else { return nil }
        guard PlistValueKind(value) == .data, let data = value as? Data else { throw mismatch(key, expected: "data", found: value) }
        return data
    }

    /// A number (integer or real).
    func number(_ key: String) throws(NetExtError) -> Double? {
        guard let value = dictionary[key] else { return nil }
        switch PlistValueKind(value) {
        case .integer, .real: return (value as? NSNumber)?.doubleValue
        default: throw mismatch(key, expected: "a number", found: value)
        }
    }

    func dictionaryValue(_ key: String) throws(NetExtError) -> PlistReader? {
        guard let value = dictionary[key] else { return nil }
        guard PlistValueKind(value) == .dictionary, let dictionary = value as? [String: Any] else {
            throw mismatch(key, expected: "a dictionary", found: value)
        }
        return PlistReader(dictionary, context: context, prefix: "\(prefix)\(key).")
    }

    func array(_ key: String) throws(NetExtError) -> [Any]? {
        guard let value = dictionary[key] else { return nil }
        guard PlistValueKind(value) == .array, let array = value as? [Any] else {
            throw mismatch(key, expected: "an array", found: value)
        }
        return array
    }

    func stringArray(_ key: String) throws(NetExtError) -> [String]? {
        guard let items = try array(key) else { return nil }
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            guard PlistValueKind(item) == .string, let string = item as? String else {
                throw fail("\(key)[\(index)]", "expected a string, found \(PlistValueKind(item).rawValue)")
            }
            strings.append(string)
        }
        return strings
    }

    func dictionaryArray(_ key: String) throws(NetExtError) -> [PlistReader]? {
        guard let items = try array(key) else { return nil }
        var readers: [PlistReader] = []
        for (index, item) in items.enumerated() {
            guard PlistValueKind(item) == .dictionary, let dictionary = item as? [String: Any] else {
                throw fail("\(key)[\(index)]", "expected a dictionary, found \(PlistValueKind(item).rawValue)")
            }
            readers.append(PlistReader(dictionary, context: context, prefix: "\(prefix)\(key)[\(index)]."))
        }
        return readers
    }

    /// Reads a string that must be one of `allowed`, naming the allowed values on failure.
    func choice(_ key: String, allowed: [String]) throws(NetExtError) -> String? {
        guard let value = try string(key) else { return nil }
        guard allowed.contains(value) else {
            throw fail(key, "unknown value '\(value)' (expected one of: \(allowed.joined(separator: ", ")))")
        }
        return value
    }
}
