import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Why a role could not listen where it was told, as a sentence naming the address
/// ("cannot listen on 127.0.0.1:8443: the address is already in use …") instead of NIO's
/// description of the failed system call.
public struct ListenFailure: Error, Sendable, CustomStringConvertible {
    public let description: String

    public init(address: ListenAddress, _ error: any Error) {
        description = "cannot listen on \(address): \(Self.reason(error))"
    }

    static func reason(_ error: any Error) -> String {
        guard let io = error as? IOError else { return ConnectFailureText.reason(error) }
        switch io.errnoCode {
        case EADDRINUSE: return "the address is already in use (another process listens on this port)"
        case EADDRNOTAVAIL: return "no interface of this machine has this address"
        case EACCES: return "permission denied (ports below 1024 need CAP_NET_BIND_SERVICE)"
        default: return String(cString: strerror(io.errnoCode))
        }
    }
}

extension RunnableHTTPServer {
    /// ``start(_:)``, with a failure to bind said as a ``ListenFailure``.
    public func listen(on address: ListenAddress) async throws(ListenFailure) -> (any Channel, Int) {
        do { return try await start(address) } catch { throw ListenFailure(address: address, error) }
    }
}
