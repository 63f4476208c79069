import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

extension URLSession {
    /// A data task whose connection becomes a stream task once its answer's head has come
    /// (seed 002; Foundation's `ResponseDisposition.becomeStream` and
    /// `urlSession(_:dataTask:didBecome:)`): for a protocol that starts with an HTTP request and
    /// goes on without HTTP's framing (`Upgrade`, RFC 9110 §7.8) — through the session's proxy
    /// and TLS when the URL is https, held to App Transport Security and the URL filter as
    /// every load is.
    ///
    /// The connection is one of its own, HTTP/1.1 (an HTTP/2 stream cannot become a byte
    /// stream, RFC 9113 §8.6). When the server switches protocols (101), the stream task has the
    /// connection, and the bytes that came right after the head are its first to read. Any
    /// other answer is returned whole, with no stream task (the connection closed).
    public func streamTask(becoming request: URLRequest) async throws(HTTPLoadError) -> (HTTPURLResponse, URLSessionStreamTask?) {
        let (origin, requirements) = try await admit(request)
        var context: NIOSSLContext?
        if origin.isSecure {
            do {
                context = try NIOSSLContext(configuration: ATSTLSConfiguration.make(requirements, trust: configuration.trust, applicationProtocols: ["http/1.1"]))
            } catch {
                throw .invalidConfiguration("TLS cannot be set up: \(TLSErrorText.describe(error))")
            }
        }
        var address: SocketAddress?
        if configuration.proxy == nil, let pinned = configuration.hostAddresses[origin.host] {
            address = try? SocketAddress(ipAddress: pinned, port: origin.port)
        }
        let connection: HTTPConnection
        let connectTimeout = TimeAmount.milliseconds(Int64(configuration.timeoutIntervalForConnect * 1000))
        let eventLoop = streamContext.eventLoopGroup.next()
        let open: @Sendable ([UInt8]?) async throws -> HTTPConnection = { [configuration, address, context] acceptedLeaf in
            try await HTTPConnection.open(
                to: origin, address: address, proxy: configuration.proxy, proxyCredential: configuration.proxyCredential, context: context, requirements: requirements,
                connectTimeout: connectTimeout, eventLoop: eventLoop, requiredInterface: configuration.requiredInterface, acceptedLeaf: acceptedLeaf
            ).get()
        }
        do {
            // The delegate judges the server as for any load (the connection is this task's alone,
            // so an acceptance is not kept for others).
            (connection, _) = try await ServerTrustGate.open(
                origin: origin, requirements: requirements, judge: pool.trustJudge, address: address, connectTimeout: connectTimeout, eventLoop: eventLoop,
                requiredInterface: configuration.requiredInterface, open: open)
        } catch {
            throw Self.loadError(error)
        }
        let raw: RawResponse
        do {
            let timeout = TimeAmount.milliseconds(Int64((request.timeoutInterval ?? configuration.timeoutIntervalForRequest) * 1000))
            raw = try await connection.exchange(try prepare(request, origin: origin), limit: configuration.maximumResponseBytes, timeout: timeout).get()
        } catch {
            connection.close()
            throw Self.loadError(error)
        }
        let response = Self.response(raw, url: request.url, connection: connection, reused: false, requirements: requirements, redirectCount: 0).1
        guard raw.head.status == .switchingProtocols, case .http1(let collector) = connection.mode else {
            connection.close()
            return (response, nil)
        }
        let channel = connection.channel
        let reader = StreamReadBuffer()
        do {
            try await channel.eventLoop.submit {
                let operations = channel.pipeline.syncOperations
                // Each removal is done when the call returns (none of these handlers delays it).
                try operations.addHandler(reader)
                _ = operations.removeHandler(collector)
                _ = operations.removeHandler(try operations.handler(type: HTTPRequestEncoder.self))
                if let validator = try? operations.handler(type: NIOHTTPRequestHeadersValidator.self) { _ = operations.removeHandler(validator) }
                // The decoder goes last: what it holds after the head is forwarded to the reader.
                _ = operations.removeHandler(try operations.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self))
            }.get()
        } catch {
            connection.close()
            throw .badServerResponse(url: request.url.absoluteString, reason: "the connection could not be taken over after 101: \(error)")
        }
        let task = URLSessionStreamTask(adopting: channel, reader: reader, host: origin.host, port: origin.port, session: streamContext)
        return (response, task)
    }
}
