import Foundation

/// Writes a file so a crash never leaves a half-written one under its name: to a temporary
/// name beside it, synced, then renamed into place. Throws the reason as text.
public enum AtomicFile {
    public struct Failure: Error, Sendable {
        public let reason: String
    }

    public static func write(_ bytes: [UInt8], to path: String) throws(Failure) {
        let temporary = path + ".tmp-\(getpid())"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes)) else {
            throw Failure(reason: "cannot create \(temporary)")
        }
        let fd = open(temporary, O_RDONLY)
        if fd >= 0 { fsync(fd); close(fd) }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(reason: "rename failed: \(reason)")
        }
    }
}
