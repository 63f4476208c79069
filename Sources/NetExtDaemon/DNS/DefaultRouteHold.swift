import Foundation

/// The links whose DNS default route netextd took from systemd-resolved while a NetExt link
/// takes every name, kept in a file so that a netextd that crashed gives them back at its next
/// start. A link is named by index and name both: an index the kernel gave to another link since
/// is left alone.
struct DefaultRouteHold: Codable, Equatable {
    struct Link: Codable, Hashable {
        var index: Int32
        var name: String

        /// The machine's links now (`/sys/class/net`), loopback left out (resolved manages none).
        static func current(in directory: String = "/sys/class/net") -> [Link] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return names.sorted().compactMap { name in
                guard name != "lo",
                      let text = try? String(contentsOfFile: "\(directory)/\(name)/ifindex", encoding: .utf8),
                      let index = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
                return Link(index: index, name: name)
            }
        }
    }

    var links: [Link] = []

    init(links: [Link] = []) { self.links = links }

    /// The hold kept at `path`; nil when there is none or the file is not one (it is written
    /// whole or not at all, below).
    init?(contentsOf path: String) {
        guard let data = FileManager.default.contents(atPath: path), let kept = try? JSONDecoder().decode(Self.self, from: data) else { return nil }
        self = kept
    }

    /// Keeps the hold at `path` (written whole to a temporary file, then renamed over it, so a
    /// crash leaves the old or the new), or removes the file when nothing is held.
    func write(to path: String?) {
        guard let path else { return }
        guard !links.isEmpty else {
            try? FileManager.default.removeItem(atPath: path)
            return
        }
        guard let data = try? JSONEncoder().encode(self) else { return }
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else { return }
        if rename(temporary, path) != 0 { try? FileManager.default.removeItem(atPath: temporary) }
    }
}
