import NIOCore

/// One encrypted server netextd's resolver forwards queries to. Each keeps one connection open
/// and reuses it for every query (several at once), opening a new one when the server closed it.
public protocol EncryptedDNSUpstream: AnyObject, Sendable {
    /// The server, for logs: `tls://name@address:port` or the DoH URL with its address.
    var serverDescription: String { get }
    /// Sends `query` (a whole DNS message) and completes with the answer under the query's own
    /// identifier, checked to be the response to its question; fails with ``EncryptedDNSError``.
    func exchange(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]>
    /// The same with a callback instead of a future (fewer allocations a query): `completion`
    /// is called once, on ``eventLoop``.
    func exchange(_ query: [UInt8], timeoutMilliseconds: Int, completion: @escaping @Sendable (Result<[UInt8], EncryptedDNSError>) -> Void)
    /// Closes the connection; queries waiting fail.
    func shutdown()
    /// The event loop its futures complete on.
    var eventLoop: any EventLoop { get }
}

extension EncryptedDNSUpstream {
    /// The callback form on the future's result.
    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int, completion: @escaping @Sendable (Result<[UInt8], EncryptedDNSError>) -> Void) {
        let server = serverDescription
        exchange(query, timeoutMilliseconds: timeoutMilliseconds).whenComplete { result in
            completion(result.mapError { ($0 as? EncryptedDNSError) ?? .connectFailed(server: server, reason: FailureText.reason($0)) })
        }
    }

    /// ``exchange(_:timeoutMilliseconds:)``, waited for on the calling thread (never an event loop's).
    public func resolve(_ query: [UInt8], timeoutMilliseconds: Int) throws(EncryptedDNSError) -> [UInt8] {
        do {
            return try exchange(query, timeoutMilliseconds: timeoutMilliseconds).wait()
        } catch let error as EncryptedDNSError {
            throw error
        } catch {
            throw .connectFailed(server: serverDescription, reason: FailureText.reason(error))
        }
    }
}
