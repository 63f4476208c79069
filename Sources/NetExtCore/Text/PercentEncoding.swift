/// `%XX` escapes (RFC 3986 §2.1), decoded strictly: a `%` not followed by two hex digits, or
/// bytes that are not UTF-8 once decoded, are refused rather than guessed at.
public enum PercentEncoding {
    public enum Failure: Error, Sendable, Hashable {
        /// A `%` at this byte offset is not followed by two hex digits.
        case brokenEscape(offset: Int)
        /// The decoded bytes are not UTF-8.
        case notUTF8
    }

    public static func decode(_ text: some StringProtocol) throws(Failure) -> String {
        guard text.contains("%") else { return String(text) }
        let input = Array(text.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < input.count {
            guard input[index] == UInt8(ascii: "%") else {
                bytes.append(input[index])
                index += 1
                continue
            }
            guard index + 2 < input.count, let high = HexDigit.value(input[index + 1]), let low = HexDigit.value(input[index + 2]) else {
                throw .brokenEscape(offset: index)
            }
            bytes.append(high << 4 | low)
            index += 3
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        return decoded
    }
}
