import Foundation

/// Where the processes of one app group keep what they share (Apple's
/// `containerURL(forSecurityApplicationGroupIdentifier:)`): `$NETEXT_GROUP_CONTAINERS/ID`, else
/// `$XDG_DATA_HOME/netext/group-containers/ID`, else `~/.local/share/netext/group-containers/ID`.
public enum GroupContainer {
    /// The group's directory (made, mode 0700, on first use by a storage).
    public static func directory(for identifier: String) throws(HTTPLoadError) -> URL {
        guard !identifier.isEmpty, identifier.count <= 200, !identifier.hasPrefix("."),
            identifier.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "." || $0 == "-" || $0 == "_" })
        else {
            throw .invalidConfiguration("the group identifier '\(identifier)' is not letters, digits, '.', '-' and '_' (such as group.com.example.app)")
        }
        let environment = ProcessInfo.processInfo.environment
        let root: URL
        if let explicit = environment["NETEXT_GROUP_CONTAINERS"], !explicit.isEmpty {
            root = URL(fileURLWithPath: explicit)
        } else if let data = environment["XDG_DATA_HOME"], !data.isEmpty {
            root = URL(fileURLWithPath: data).appendingPathComponent("netext/group-containers")
        } else {
            root = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share/netext/group-containers")
        }
        return root.appendingPathComponent(identifier)
    }
}
