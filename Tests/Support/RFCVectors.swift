import Foundation

/// Test vectors from the RFCs, as JSON files in Tests/Fixtures/vectors (each names its source in
/// `_source`), shared by the test targets that check a wire format against them.
public enum RFCVectors {
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/vectors")

    /// A vector file's top-level object.
    public static func file(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { throw Malformed(description: "\(name) is not a JSON object") }
        return object
    }

    /// The `vectors` array of a vector file.
    public static func list(_ name: String) throws -> [[String: Any]] {
        guard let vectors = try file(name)["vectors"] as? [[String: Any]] else { throw Malformed(description: "\(name) has no vectors array") }
        return vectors
    }

    /// Bytes from a hex string field.
    public static func hex(_ text: Any?) throws -> [UInt8] {
        guard let string = text as? String, string.count % 2 == 0 else { throw Malformed(description: "not an even-length hex string: \(String(describing: text))") }
        var out: [UInt8] = []
        out.reserveCapacity(string.count / 2)
        var index = string.startIndex
        while index < string.endIndex {
            let next = string.index(index, offsetBy: 2)
            guard let byte = UInt8(string[index..<next], radix: 16) else { throw Malformed(description: "'\(string[index..<next])' is not hex") }
            out.append(byte)
            index = next
        }
        return out
    }
}
