import Foundation

/// Test fixtures shared by the test targets, in `Tests/Fixtures`.
public enum Fixtures {
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures")

    public static func profile(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent("profiles/\(name)"))
    }
}
