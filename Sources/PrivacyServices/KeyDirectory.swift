import Foundation
import NetExtCore
import NetExtLinux

/// A directory of private keys (the issuer's, the gateway's): created 0700, files written
/// atomically with mode 0600, named `<prefix><stem><suffix>`.
struct KeyDirectory: Sendable {
    let path: String
    let prefix: String
    let suffix: String

    init(path: String, prefix: String, suffix: String) throws(PrivacyServiceError) {
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw .file(path: path, reason: String(cString: strerror(errno))) }
        self.path = path
        self.prefix = prefix
        self.suffix = suffix
    }

    /// Every key file: the part of its name between prefix and suffix, its path and contents.
    func files() throws(PrivacyServiceError) -> [(stem: String, path: String, contents: Data)] {
        var found: [(String, String, Data)] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where name.hasPrefix(prefix) && name.hasSuffix(suffix) {
            let file = path + "/" + name
            guard let contents = FileManager.default.contents(atPath: file) else { throw .file(path: file, reason: "cannot read") }
            found.append((String(name.dropFirst(prefix.count).dropLast(suffix.count)), file, contents))
        }
        return found
    }

    func file(_ stem: String) -> String { path + "/" + prefix + stem + suffix }

    func write(_ bytes: [UInt8], stem: String) throws(PrivacyServiceError) {
        do throws(AtomicFile.Failure) { try AtomicFile.write(bytes, to: file(stem), mode: 0o600) } catch {
            throw .file(path: file(stem), reason: error.reason)
        }
    }

    func remove(_ stem: String) { unlink(file(stem)) }
}
