import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes a file so that a crash never leaves a half-written one under its name: the bytes go
/// to a temporary name beside it (created with `mode`, so secrets are never readable by
/// others even for a moment), are synced, renamed into place, and the directory is synced.
public enum AtomicFile {
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(Failure) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(reason: "cannot create \(temporary): \(String(cString: strerror(errno)))") }
        fchmod(fd, mode)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(temporary)
                throw Failure(reason: "cannot write \(temporary): \(reason)")
            }
            offset += written
        }
        let synced = fsync(fd)
        close(fd)
        guard synced == 0 else {
            unlink(temporary)
            throw Failure(reason: "cannot sync \(temporary)")
        }
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(reason: "rename failed: \(reason)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let directoryFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }
}
