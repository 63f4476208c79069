import Foundation

/// Runs a system tool (iproute2's `ip`, `nft`, `sysctl`) to completion and collects its output.
public enum CommandRunner {
    /// Where `ip` is on this machine.
    public static let ipPath: String = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/sbin/ip"

    /// Where `nft` is on this machine, if installed.
    public static let nftPath: String? = ["/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Runs `executable` with `arguments` (and `input` on its standard input); returns its exit
    /// status and combined output.
    public static func run(_ executable: String, _ arguments: [String], input: String? = nil) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let inputPipe = input.map { _ in Pipe() }
        process.standardInput = inputPipe ?? FileHandle.nullDevice
        do { try process.run() } catch { return (-1, "cannot run \(executable): \(error)") }
        if let inputPipe, let input {
            inputPipe.fileHandleForWriting.write(Data(input.utf8))
            try? inputPipe.fileHandleForWriting.close()
        }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
