import Foundation

/// The executables of this build that tests start: `$NETEXT_BIN_DIR` (scripts/test sets it),
/// else the repository's `.build/debug`.
public enum BuiltBinaries {
    public static let directory: String = ProcessInfo.processInfo.environment["NETEXT_BIN_DIR"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug").path
}
