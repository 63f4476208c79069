import Foundation
import NetExtCore

/// What a provider executable answers before it becomes a provider: netextd starts providers
/// with their manifest's arguments, never with `--help` or `--version`, so those two are for
/// people (and for package checks) and exit at once.
public enum ProviderExecutable {
    /// Prints `usage` for `--help` or `-h`, or `NAME VERSION` for `--version`, and exits 0;
    /// returns for anything else.
    public static func answerInformationalArguments(name: String, usage: String, arguments: [String] = CommandLine.arguments) {
        switch arguments.dropFirst().first {
        case "--help", "-h":
            print(usage)
            exit(0)
        case "--version":
            print("\(name) \(NetExtVersion.current)")
            exit(0)
        default:
            return
        }
    }
}
