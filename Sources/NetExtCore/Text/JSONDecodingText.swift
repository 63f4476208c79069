import Foundation

/// A JSON decoding failure as a sentence naming the key at fault (`peers[0].publicKey`), instead
/// of Foundation's `DecodingError` dump with its coding-key structures.
public enum JSONDecodingText {
    /// "key 'peers[0].publicKey' is required", "key 'mtu': expected a number",
    /// "not valid JSON: invalid value at line 3, column 12". Give the document (`data`) for the
    /// position of a syntax error: Foundation's decoder does not report one.
    public static func describe(_ error: any Error, data: Data? = nil) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "key '\(path(context.codingPath + [key]))' is required"
        case .typeMismatch(let type, let context):
            return "\(subject(context.codingPath)): expected \(kind(type))"
        case .valueNotFound(let type, let context):
            return "\(subject(context.codingPath)) is null; expected \(kind(type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "not valid JSON" + (data.flatMap(syntaxError).map { ": \($0)" } ?? "")
            }
            return "\(subject(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    /// Where and what the syntax error is ("invalid value at line 3, column 12"), from
    /// JSONSerialization's report ("Invalid value around character 40.").
    static func syntaxError(in data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            guard var detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String else { return nil }
            if detail.hasSuffix(".") { detail.removeLast() }
            guard let range = detail.range(of: " around character "), let offset = Int(detail[range.upperBound...]) else {
                return detail.prefix(1).lowercased() + detail.dropFirst()
            }
            let before = data.prefix(max(0, min(offset, data.count)))
            let line = before.filter { $0 == 0x0a }.count + 1
            let column = before.count - (before.lastIndex(of: 0x0a).map { $0 - before.startIndex + 1 } ?? 0) + 1
            let what = detail[..<range.lowerBound]
            return what.prefix(1).lowercased() + what.dropFirst() + " at line \(line), column \(column)"
        }
    }

    /// `peers[0].publicKey`.
    public static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text
    }

    private static func subject(_ keys: [any CodingKey]) -> String {
        keys.isEmpty ? "the document" : "key '\(path(keys))'"
    }

    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type, is UInt8.Type, is Double.Type, is Float.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array") ? "a list" : String(describing: type).hasPrefix("Dictionary") ? "an object" : "a \(type) value"
        }
    }
}
