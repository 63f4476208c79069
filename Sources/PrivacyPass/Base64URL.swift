import Foundation

/// base64url (RFC 4648 §5), as Privacy Pass headers and directories carry keys and tokens.
public enum Base64URL {
    /// Encodes with padding when `padded` (RFC 9578 §4 publishes token keys padded; RFC 9577
    /// header values are accepted either way).
    public static func encode(_ bytes: [UInt8], padded: Bool = true) -> String {
        var text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        if !padded { while text.hasSuffix("=") { text.removeLast() } }
        return text
    }

    /// Decodes padded or unpadded base64url; `nil` for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !standard.contains("=") || standard.count % 4 == 0 else { return nil }
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }
}
