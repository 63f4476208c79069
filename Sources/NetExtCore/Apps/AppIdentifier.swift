/// An app's identity on Linux, as a bundle identifier is on Apple's platforms: a reverse-DNS
/// name (`org.mozilla.firefox`), the same form desktop files, Flatpak and D-Bus use for
/// application IDs. It is what `NEAppRule.matchSigningIdentifier` becomes here.
public struct AppIdentifier: Sendable, Hashable, CheckedString {
    public let rawValue: String

    /// Checks the form: 2–255 characters in at least two dot-separated elements of ASCII
    /// letters, digits, `_` and `-`, none empty and none starting with a digit (the D-Bus
    /// well-known-name rules Flatpak and desktop files follow).
    public init(_ text: String) throws(NetExtError) {
        guard let problem = Self.problem(in: text) else {
            rawValue = text
            return
        }
        throw .invalid("'\(text)' is not an app identifier: \(problem) (an app identifier is a reverse-DNS name such as org.mozilla.firefox)")
    }

    public var description: String { rawValue }


    static func problem(in text: String) -> String? {
        if text.isEmpty { return "it is empty" }
        if text.utf8.count > 255 { return "it is longer than 255 characters" }
        let elements = text.split(separator: ".", omittingEmptySubsequences: false)
        if elements.count < 2 { return "it needs at least two dot-separated elements" }
        for element in elements {
            guard let first = element.utf8.first else { return "it has an empty element" }
            if first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") { return "the element '\(element)' starts with a digit" }
            for byte in element.utf8 where !Self.isAllowed(byte) {
                return "'\(String(decoding: [byte], as: UTF8.self))' is not allowed (letters, digits, '_' and '-' only)"
            }
        }
        return nil
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }
}
