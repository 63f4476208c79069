import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A group's cookies on disk: `cookies.json` beside a lock file. Every read takes a shared
/// flock(2) and every change an exclusive one around read–change–write, so processes of the
/// group see each other's cookies at once and never lose one to a race; the file is replaced
/// by rename after fsync, so a crash mid-write leaves the previous jar whole.
struct CookieJarFile: Sendable {
    let directory: URL
    var file: URL { directory.appendingPathComponent("cookies.json") }
    var lockFile: URL { directory.appendingPathComponent("cookies.lock") }

    init(directory: URL) throws(HTTPLoadError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .invalidConfiguration("cannot make the cookie directory \(directory.path): \(error.localizedDescription)")
        }
    }

    /// The cookies, under a shared lock.
    func read() throws(HTTPLoadError) -> [HTTPCookie] {
        try locked(exclusive: false) { () throws(HTTPLoadError) -> [HTTPCookie] in try load() }
    }

    /// Reads, changes and writes back under an exclusive lock.
    func update<Result>(_ change: (inout [HTTPCookie]) -> Result) throws(HTTPLoadError) -> Result {
        try locked(exclusive: true) { () throws(HTTPLoadError) -> Result in
            var cookies = try load()
            let before = cookies
            let result = change(&cookies)
            if cookies != before { try store(cookies) }
            return result
        }
    }

    private func load() throws(HTTPLoadError) -> [HTTPCookie] {
        guard let data = FileManager.default.contents(atPath: file.path), !data.isEmpty else { return [] }
        do { return try JSONDecoder().decode([HTTPCookie].self, from: data) } catch {
            throw .invalidConfiguration("the cookie file \(file.path) is not a cookie list (\(error.localizedDescription)); move it away to start afresh")
        }
    }

    private func store(_ cookies: [HTTPCookie]) throws(HTTPLoadError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let temporary = directory.appendingPathComponent("cookies.json.\(getpid()).tmp")
        do {
            let data = try encoder.encode(cookies)
            let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw POSIXFailure(call: "open \(temporary.path)") }
            defer { close(descriptor) }
            try data.withUnsafeBytes { bytes in try POSIXFailure.writeAll(bytes, to: descriptor, what: temporary.path) }
            guard fsync(descriptor) == 0 else { throw POSIXFailure(call: "fsync \(temporary.path)") }
            guard rename(temporary.path, file.path) == 0 else { throw POSIXFailure(call: "rename to \(file.path)") }
            let directoryDescriptor = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directoryDescriptor >= 0 { _ = fsync(directoryDescriptor); close(directoryDescriptor) }
        } catch {
            unlink(temporary.path)
            throw .invalidConfiguration("cannot write the cookie file \(file.path): \(error)")
        }
    }

    private func locked<Result>(exclusive: Bool, _ body: () throws(HTTPLoadError) -> Result) throws(HTTPLoadError) -> Result {
        let descriptor = open(lockFile.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .invalidConfiguration("cannot open the cookie lock \(lockFile.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw .invalidConfiguration("cannot lock \(lockFile.path): \(String(cString: strerror(errno)))") }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}

/// A failed system call, with errno's words.
struct POSIXFailure: Error, CustomStringConvertible {
    var description: String
    init(call: String) { description = "\(call): \(String(cString: strerror(errno)))" }

    /// write(2) until all of `bytes` is written (short writes and EINTR taken care of).
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, what: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw POSIXFailure(call: "write \(what)")
            }
            offset += written
        }
    }
}
