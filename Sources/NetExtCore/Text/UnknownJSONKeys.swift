import Foundation

/// Keys a JSON file holds that its type does not read, so that a misspelt key (`mtu2`,
/// `peers[0].pubkey`) is refused, naming it, instead of being silently ignored.
///
/// The decoded value is encoded again and the two trees compared: every object key of the file
/// must appear at the same place in the re-encoded value. Keys whose value is `null` are left
/// alone (an optional that is absent encodes as nothing).
public enum UnknownJSONKeys {
    /// The paths (`a.b`, `peers[0].pubkey`) of keys in `data` that `decoded` does not carry, in
    /// file order where JSON keeps one (sorted within an object).
    public static func paths(in data: Data, decoded: some Encodable) -> [String] {
        guard let file = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
              let encoded = try? JSONEncoder().encode(decoded),
              let known = try? JSONSerialization.jsonObject(with: encoded, options: [.fragmentsAllowed])
        else { return [] }
        var found: [String] = []
        compare(file, known, path: "", into: &found)
        return found
    }

    /// Throws `NetExtError.invalid` naming the first unknown key (and how many others there are).
    public static func refuse(in data: Data, decoded: some Encodable, file: String) throws(NetExtError) {
        let unknown = paths(in: data, decoded: decoded)
        guard let first = unknown.first else { return }
        let others = unknown.count > 1 ? " (and \(unknown.count - 1) more: \(unknown.dropFirst().prefix(5).joined(separator: ", ")))" : ""
        throw .invalid("\(file): unknown key '\(first)'\(others); check its spelling against the documentation")
    }

    private static func compare(_ file: Any, _ known: Any?, path: String, into found: inout [String]) {
        if let object = file as? [String: Any] {
            let knownObject = known as? [String: Any] ?? [:]
            for key in object.keys.sorted() {
                let value = object[key]!
                if value is NSNull { continue }
                let child = path.isEmpty ? key : path + "." + key
                guard let knownValue = knownObject[key] else { found.append(child); continue }
                compare(value, knownValue, path: child, into: &found)
            }
        } else if let array = file as? [Any] {
            let knownArray = known as? [Any] ?? []
            for (index, element) in array.enumerated() {
                compare(element, index < knownArray.count ? knownArray[index] : nil, path: "\(path)[\(index)]", into: &found)
            }
        }
    }
}
