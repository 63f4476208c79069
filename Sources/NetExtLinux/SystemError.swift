#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call: which call, on what, and the errno it returned.
public struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    public var call: String
    public var errno: Int32
    public var subject: String?

    public init(_ call: String, errno: Int32, subject: String? = nil) {
        self.call = call
        self.errno = errno
        self.subject = subject
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let subject { return "\(call)(\(subject)): \(reason)" }
        return "\(call): \(reason)"
    }
}
