import Foundation

/// Makes text from clients safe to put in a log line: control characters (C0, DEL, C1, and the
/// Unicode line and paragraph separators) are written as escapes, so a name or identifier can
/// never start a forged line of its own.
public enum LogText {
    /// `text` with every control character escaped (`\n`, `\r`, `\t`, `\\`, else `\u{XX}`).
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) || text.contains("\\") else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\\": result += "\\\\"
            case _ where needsEscape(scalar): result += "\\u{\(String(scalar.value, radix: 16))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// `escaped(text)` between double quotes, a quote inside escaped too.
    public static func quoted(_ text: String) -> String {
        "\"" + escaped(text).replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Whether `text` has a control character (identifiers with one are refused).
    public static func containsControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains(where: needsEscape)
    }

    /// Whether `scalar` is a control character a log line must escape: C0, DEL, C1, and the
    /// Unicode line and paragraph separators.
    public static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}
