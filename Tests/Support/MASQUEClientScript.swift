import Foundation

/// The relay's test peer nobody here wrote: `scripts/lib/masque-client.py` on Debian's
/// python3-h2, run with `arguments`; its `key=value` output lines as a dictionary (the last
/// value of a key wins; other lines under `output`).
public enum MASQUEClientScript {
    public static func run(_ arguments: [String]) async throws -> [String: String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        process.arguments = [root.appendingPathComponent("scripts/lib/masque-client.py").path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = try await offPool { output.fileHandleForReading.readDataToEndOfFile() }
        process.waitUntilExit()
        var fields: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else {
                fields["output", default: ""] += line + "\n"
                continue
            }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }
}
