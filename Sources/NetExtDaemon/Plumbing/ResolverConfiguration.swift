import Foundation
import NetExtCore

/// The resolver configuration a tunnel's DNS settings replace while it is up: the file (normally
/// `/etc/resolv.conf`, which `ip netns exec` bind-mounts per namespace) is rewritten, and its
/// original content is kept beside netextd's state so it is restored on stop, or on the next
/// start after a crash.
public struct ResolverConfiguration: Sendable {
    public let path: String
    public let backupPath: String

    public init(path: String, backupPath: String) {
        self.path = path
        self.backupPath = backupPath
    }

    /// The file's content for these settings.
    public static func render(_ dns: DNSSettings) -> String {
        var lines = ["# Written by netextd while a NetExt tunnel is up; restored when it stops."]
        lines += dns.servers.prefix(3).map { "nameserver \($0)" }
        if !dns.searchDomains.isEmpty { lines.append("search " + dns.searchDomains.joined(separator: " ")) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The file's content pointing at netextd's DNS stub, keeping the original search domains and
    /// adding the tunnel's.
    public static func renderStub(nameserver: String, searchDomains: [String]) -> String {
        var lines = ["# Written by netextd: names go to its DNS stub (a tunnel's match domains, system DNS settings); restored when neither needs it.",
                     "nameserver \(nameserver)"]
        if !searchDomains.isEmpty { lines.append("search " + searchDomains.joined(separator: " ")) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Points the file at netextd's DNS stub, keeping the original search domains and adding
    /// `searchDomains` (a tunnel's).
    public func installStub(nameserver: String, addingSearchDomains searchDomains: [String] = []) throws(NetExtError) {
        var search = ResolverFileText.values(of: "search", in: originalContent())
        for domain in searchDomains where !search.contains(domain) { search.append(domain) }
        try install(content: Self.renderStub(nameserver: nameserver, searchDomains: search))
    }

    /// The name servers the file named before netextd changed it, without `stub` (no loops).
    public func originalNameservers(excluding stub: String) -> [String] {
        ResolverFileText.values(of: "nameserver", in: originalContent()).filter { $0 != stub }
    }

    /// The file as it was before netextd changed it (the kept copy, or the file itself).
    public func originalContent() -> String {
        let data = FileManager.default.contents(atPath: backupPath) ?? FileManager.default.contents(atPath: path) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// Installs the settings, keeping the original (only the first time).
    public func install(_ dns: DNSSettings) throws(NetExtError) {
        try install(content: Self.render(dns))
    }

    /// Installs `content`, keeping the original (only the first time).
    public func install(content: String) throws(NetExtError) {
        let fileManager = FileManager.default
        if !fileManager.fileExists(atPath: backupPath) {
            let original = fileManager.contents(atPath: path) ?? Data()
            guard fileManager.createFile(atPath: backupPath, contents: original, attributes: [.posixPermissions: 0o600]) else {
                throw .readWrite("cannot keep a copy of \(path) at \(backupPath)")
            }
        }
        do {
            try Data(content.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw .readWrite("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Puts the original back, if there is one to restore.
    public func restore() {
        guard let original = FileManager.default.contents(atPath: backupPath) else { return }
        if (try? original.write(to: URL(fileURLWithPath: path))) != nil {
            try? FileManager.default.removeItem(atPath: backupPath)
        }
    }
}
