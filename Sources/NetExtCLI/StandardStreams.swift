import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Writes to standard output and standard error with write(2), never trapping: when the reader
/// of standard output has gone (`netext status | head -1`), the command ends quietly with exit
/// status 0, as its reader asked for no more; a failed write to standard error is ignored.
enum StandardStreams {
    /// Writes `data` to standard output, unbuffered.
    static func out(_ data: Data) {
        if !write(data, to: STDOUT_FILENO) { exit(0) }
    }

    static func out(_ text: String) { out(Data(text.utf8)) }

    /// Writes `data` to standard error.
    static func error(_ data: Data) { _ = write(data, to: STDERR_FILENO) }

    static func error(_ text: String) { error(Data(text.utf8)) }

    /// Everything `print` buffered goes out before a direct write, so lines keep their order.
    private static func write(_ data: Data, to descriptor: Int32) -> Bool {
        fflush(nil)
        return data.withUnsafeBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    /// Makes a closed pipe an EPIPE error instead of a SIGPIPE death (for `print` too, whose
    /// failed writes are then dropped and noticed at exit).
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
