/// A value kept as one string that only a check lets in (``AppIdentifier``,
/// ``UnitNamePattern``): it encodes as that string, and decoding runs the same check as
/// `init(_:)`, so a stored file cannot smuggle in what the initializer refuses. Its
/// `description` is the string itself.
public protocol CheckedString: Codable, CustomStringConvertible {
    init(_ text: String) throws(NetExtError)
}

extension CheckedString {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do throws(NetExtError) { try self.init(text) } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
