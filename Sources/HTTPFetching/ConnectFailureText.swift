import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Why a connection could not be made, in the system's words ("Connection refused", "cannot
/// resolve the name"), instead of NIO's description of its attempts.
package enum ConnectFailureText {
    package static func reason(_ error: any Error) -> String {
        if let failure = error as? NIOConnectionError {
            if let first = failure.connectionErrors.first { return reason(first.error) }
            return failure.dnsAError != nil || failure.dnsAAAAError != nil ? "cannot resolve the name" : "no address to connect to"
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        if error is ChannelError { return "the connection failed (\(error))" }
        return "\(error)"
    }
}
