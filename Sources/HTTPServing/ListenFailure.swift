import HTTPFetching
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Why a role could not listen where it was told, as a sentence naming the address
/// ("cannot listen on 127.0.0.1:8443: the address is already in use …") instead of NIO's
/// description of the failed system call.
public struct ListenFailure: Error, Sendable, CustomStringConvertible {
    /// The address that could not be bound.
    public let address: ListenAddress
    /// Why, in a few words ("the address is already in use …").
    public let reason: String

    public init(address: ListenAddress, _ error: any Error) {
        self.address = address
        reason = Self.reason(error)
    }

    public var description: String { "cannot listen on \(address): \(reason)" }

    /// The three refusals an admin meets, said with what to do; anything else in the system's
    /// words (`ConnectFailureText`).
    static func reason(_ error: any Error) -> String {
        switch (error as? IOError)?.errnoCode {
        case EADDRINUSE: "the address is already in use (another process listens on this port)"
        case EADDRNOTAVAIL: "no interface of this machine has this address"
        case EACCES: "permission denied (ports below 1024 need CAP_NET_BIND_SERVICE)"
        default: ConnectFailureText.reason(error)
        }
    }
}

extension RunnableHTTPServer {
    /// ``start(_:)``, with a failure to bind said as a ``ListenFailure``.
    public func listen(on address: ListenAddress) async throws(ListenFailure) -> Int {
        do { return try await start(address) } catch { throw ListenFailure(address: address, error) }
    }
}
