import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Loads URLs as Foundation's `URLSession` does, with App Transport Security: every load is
/// held to the session's ``ATSPolicy`` (cleartext refused, TLS 1.2+, forward secrecy, strong
/// certificates, pins) unless the policy excepts its domain, and a refused load fails with
/// ``HTTPLoadError/refused(_:)`` naming the rule and the exception that lifts it.
///
/// HTTP/2 is chosen by ALPN and one connection per origin carries every concurrent load;
/// HTTP/1.1 connections are kept alive and reused.
public final class URLSession: Sendable {
    public let configuration: URLSessionConfiguration
    let pool: HTTPConnectionPool
    /// What the session's stream tasks use.
    let streamContext: URLSessionStreamContext

    /// Told of background tasks' progress and completion (Foundation's session delegate).
    public let delegate: (any URLSessionDelegate)?
    /// A background session's link to the transfer service.
    let background: BackgroundTransferClient?

    /// A session. A background configuration (``URLSessionConfiguration/background(withIdentifier:)``)
    /// connects to the user's transfer service at once, so that the events of tasks finished
    /// while no process of the session ran reach `delegate`. As with Foundation, a session with a
    /// delegate keeps itself and the delegate until ``invalidateAndCancel()`` (or
    /// `finishTasksAndInvalidate()`).
    public init(
        configuration: URLSessionConfiguration = .default, delegate: (any URLSessionDelegate)? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.configuration = configuration
        self.delegate = delegate
        background = configuration.identifier.map { BackgroundTransferClient(identifier: $0, socketPath: configuration.transferServiceSocket) }
        var addresses: [String: String] = [:]
        for (name, address) in configuration.hostAddresses { addresses[name.lowercased()] = address }
        pool = HTTPConnectionPool(
            eventLoopGroup: eventLoopGroup, trust: configuration.trust, allowsHTTP2: configuration.allowsHTTP2,
            connectTimeout: .milliseconds(Int64(configuration.timeoutIntervalForConnect * 1000)), addresses: addresses,
            maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost, proxy: configuration.proxy, proxyCredential: configuration.proxyCredential,
            requiredInterface: configuration.requiredInterface)
        streamContext = URLSessionStreamContext(configuration: configuration, eventLoopGroup: eventLoopGroup, trustJudge: pool.trustJudge)
        if delegate != nil {
            // As Foundation's: a session with a delegate is kept (with its delegate) until it is
            // invalidated, so its tasks — a stream task outliving the caller's reference — still
            // have a delegate to ask about their servers.
            pool.trustJudge.set { trust, origin in await self.judge(trust, origin: origin) }
        }
        if let background {
            background.bind(to: self)
            Task { _ = try? await background.call(.list) }
        }
    }

    /// Closes the session's connections; loads after it fail. A background session's tasks are
    /// cancelled too (each completes with ``HTTPLoadError/cancelled``), as Foundation's are.
    public func invalidateAndCancel() async {
        pool.trustJudge.clear()
        await pool.shutdown()
        guard let background else { return }
        if let tasks = try? await allTasks() {
            for task in tasks where task.state != .completed { task.cancel() }
        }
        await background.close()
    }

    /// How many connections the session has opened (one for any number of HTTP/2 loads to an origin).
    public var connectionsOpened: Int { get async { await pool.connectionsOpened } }

    /// `data(from:)`: a GET.
    public func data(from url: URL) async throws(HTTPLoadError) -> (Data, HTTPURLResponse) {
        try await data(for: URLRequest(url: url))
    }

    /// `data(for:)`: the request's answer, redirects followed (RFC 9110 §15.4: 303, and 301/302
    /// after a POST, become a GET without body; 307 and 308 keep method and body).
    public func data(for request: URLRequest) async throws(HTTPLoadError) -> (Data, HTTPURLResponse) {
        try await perform(request, sink: nil)
    }

    /// `upload(for:from:)`: `data` as the request's body (POST unless the request says
    /// otherwise), `progress` told the bytes sent so far and the total as the connection takes
    /// them; the answer as `data(for:)` gives it.
    public func upload(
        for request: URLRequest, from data: Data, progress: (@Sendable (_ sent: Int64, _ total: Int64) -> Void)? = nil
    ) async throws(HTTPLoadError) -> (Data, HTTPURLResponse) {
        var upload = request
        upload.httpBody = data
        if upload.httpMethod == "GET" { upload.httpMethod = "POST" }
        return try await perform(upload, sink: nil, uploadProgress: progress)
    }

    /// `upload(for:fromFile:)`: the file as the body, read from disk in 64 KiB pieces as the
    /// connection takes them (no size limit but the server's); its length is its size when the
    /// load starts. A 307/308 redirect sends it again from the start.
    public func upload(
        for request: URLRequest, fromFile file: URL, progress: (@Sendable (_ sent: Int64, _ total: Int64) -> Void)? = nil
    ) async throws(HTTPLoadError) -> (Data, HTTPURLResponse) {
        guard FileManager.default.isReadableFile(atPath: file.path) else {
            throw .invalidConfiguration("cannot read the upload's file \(file.path)")
        }
        var upload = request
        upload.httpBody = nil
        upload.bodyFile = file.path
        if upload.httpMethod == "GET" { upload.httpMethod = "POST" }
        return try await perform(upload, sink: nil, uploadProgress: progress)
    }

    /// The redirect loop of every task; a 2xx body goes to `sink` when one is given.
    func perform(
        _ request: URLRequest, sink: BodySink?, uploadProgress: (@Sendable (Int64, Int64) -> Void)? = nil
    ) async throws(HTTPLoadError) -> (Data, HTTPURLResponse) {
        var current = request
        var redirects = 0
        var authentication = AuthenticationProgress()
        while true {
            let (body, response) = try await load(current, redirectCount: redirects, sink: sink, uploadProgress: uploadProgress)
            if response.statusCode == 401, try await answerChallenge(of: response, request: &current, progress: &authentication) { continue }
            authentication.keepAccepted(in: configuration.urlCredentialStorage)
            guard [301, 302, 303, 307, 308].contains(response.statusCode), let location = response.value(forHTTPHeaderField: "Location") else {
                return (body, response)
            }
            guard redirects < configuration.maximumRedirects else {
                throw .tooManyRedirects(url: request.url.absoluteString, limit: configuration.maximumRedirects)
            }
            guard let next = URL(string: location, relativeTo: current.url)?.absoluteURL else {
                throw .badServerResponse(url: current.url.absoluteString, reason: "its Location '\(location)' is not a URL")
            }
            redirects += 1
            if response.statusCode == 303 || ([301, 302].contains(response.statusCode) && current.httpMethod == "POST") {
                if current.httpMethod != "HEAD" { current.httpMethod = "GET" }
                current.httpBody = nil
                current.bodyFile = nil
                current.setValue(nil, forHTTPHeaderField: "Content-Type")
            }
            if next.host?.lowercased() != current.url.host?.lowercased() {
                current.setValue(nil, forHTTPHeaderField: "Authorization")
            }
            current.url = next
        }
    }

    /// One exchange, no redirects followed.
    private func load(
        _ request: URLRequest, redirectCount: Int, sink: BodySink?, uploadProgress: (@Sendable (Int64, Int64) -> Void)?
    ) async throws(HTTPLoadError) -> (Data, HTTPURLResponse) {
        let (origin, requirements) = try await admit(request)
        var prepared = try prepare(request, origin: origin)
        prepared.uploadProgress = uploadProgress
        let cookies = request.httpShouldHandleCookies ? configuration.httpCookieStorage : nil
        if let cookies, !prepared.head.headers.contains(name: "Cookie"),
            let header = cookies.cookieHeader(for: request.url, method: request.httpMethod, mainDocumentURL: request.mainDocumentURL) {
            prepared.head.headers.add(name: "Cookie", value: header)
        }
        let key = HTTPConnectionPool.Key(origin: origin, requirements: requirements)
        let timeout = TimeAmount.milliseconds(Int64((request.timeoutInterval ?? configuration.timeoutIntervalForRequest) * 1000))
        var attempt = 0
        while true {
            attempt += 1
            let connection: HTTPConnection
            let reused: Bool
            do { (connection, reused) = try await pool.lease(key) } catch {
                let failure = Self.loadError(error)
                if case .refused(let refusal) = failure { configuration.diagnosticLog?(Self.refusedLine(refusal, url: request.url)) }
                throw failure
            }
            do {
                let raw = try await connection.exchange(prepared, limit: configuration.maximumResponseBytes, sink: sink, timeout: timeout).get()
                if !connection.isHTTP2 { await pool.release(connection, key, reusable: raw.head.isKeepAlive && prepared.head.isKeepAlive) }
                if let cookies {
                    do { try cookies.store(setCookieFields: raw.head.headers["set-cookie"], from: request.url) } catch {
                        configuration.diagnosticLog?("cookies: \(error)")
                    }
                }
                configuration.diagnosticLog?("ATS: \(request.url.absoluteString) allowed under \(requirements.source) rules (\(requirements.summary))")
                return Self.response(raw, url: request.url, connection: connection, reused: reused, requirements: requirements, redirectCount: redirectCount)
            } catch {
                if !connection.isHTTP2 { await pool.release(connection, key, reusable: false) }
                // A kept-alive connection the server had just closed: once more on a new one.
                if error is ConnectionClosedBeforeAnswer, reused, attempt == 1, (sink?.received ?? 0) == 0 { continue }
                throw Self.loadError(error)
            }
        }
    }

    /// What every load passes before anything connects: its origin, ATS's cleartext rule and
    /// the URL filter; the ATS rules for its host.
    func admit(_ request: URLRequest) async throws(HTTPLoadError) -> (HTTPOrigin, ATSRequirements) {
        let origin = try Self.origin(of: request.url)
        let requirements = configuration.appTransportSecurity.requirements(for: origin.host)
        if !origin.isSecure && !requirements.allowsInsecureHTTP {
            let refusal = ATSRefusal(
                rule: .cleartextHTTP, detail: "\(request.url.absoluteString) is cleartext HTTP",
                domain: requirements.domain, source: requirements.source)
            configuration.diagnosticLog?(Self.refusedLine(refusal, url: request.url))
            throw .refused(refusal)
        }
        if let filter = configuration.urlFilter, let reason = await filter.denial(of: request.url) {
            configuration.diagnosticLog?("URL filter: \(request.url.absoluteString) denied (\(reason))")
            throw .deniedByURLFilter(url: request.url.absoluteString, reason: reason)
        }
        return (origin, requirements)
    }

    private static func refusedLine(_ refusal: ATSRefusal, url: URL) -> String {
        "ATS: \(url.absoluteString) refused under \(refusal.source) rules (rule: \(refusal.rule.rawValue))"
    }

    func prepare(_ request: URLRequest, origin: HTTPOrigin) throws(HTTPLoadError) -> PreparedRequest {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        var path = components?.percentEncodedPath ?? ""
        if path.isEmpty { path = "/" }
        if let query = components?.percentEncodedQuery { path += "?\(query)" }
        // Through an HTTP proxy, a cleartext request names its whole URL (RFC 9112 §3.2.2).
        if case .http? = configuration.proxy, !origin.isSecure { path = "http://\(origin.authority)\(path)" }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: origin.authority)
        var fields = configuration.httpAdditionalHeaders
        for (name, value) in request.allHTTPHeaderFields {
            for key in fields.keys where key.lowercased() == name.lowercased() { fields[key] = nil }
            fields[name] = value
        }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) where name.lowercased() != "host" {
            headers.add(name: name, value: value)
        }
        // A cleartext request to an HTTP proxy carries the proxy's credentials itself (RFC 9110 §11.7.2).
        if case .http? = configuration.proxy, !origin.isSecure, let credential = configuration.proxyCredential {
            headers.replaceOrAdd(name: "Proxy-Authorization", value: credential.basicAuthorization)
        }
        var body: ByteBuffer?
        var bodyFile: PreparedRequest.BodyFile?
        if let data = request.httpBody {
            body = ByteBuffer(bytes: data)
            if !headers.contains(name: "Content-Length") { headers.add(name: "Content-Length", value: "\(data.count)") }
        } else if let path = request.bodyFile {
            var facts = stat()
            guard stat(path, &facts) == 0, facts.st_mode & S_IFMT == S_IFREG else {
                throw .invalidConfiguration("cannot read the upload's file \(path): \(String(cString: strerror(errno)))")
            }
            bodyFile = PreparedRequest.BodyFile(path: path, length: Int64(facts.st_size))
            headers.replaceOrAdd(name: "Content-Length", value: "\(facts.st_size)")
        } else if ["POST", "PUT", "PATCH"].contains(request.httpMethod) {
            headers.add(name: "Content-Length", value: "0")
        }
        let head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.httpMethod), uri: path, headers: headers)
        return PreparedRequest(head: head, body: body, bodyFile: bodyFile, url: request.url.absoluteString)
    }

    /// Whether `url` is one a session loads: http or https with a host.
    public static func canLoad(_ url: URL) -> Bool { (try? origin(of: url)) != nil }

    static func origin(of url: URL) throws(HTTPLoadError) -> HTTPOrigin {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", var host = url.host, !host.isEmpty else {
            throw .invalidURL(url.absoluteString)
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let secure = scheme == "https"
        return HTTPOrigin(isSecure: secure, host: host.lowercased(), port: url.port ?? (secure ? 443 : 80))
    }

    static func response(
        _ raw: RawResponse, url: URL, connection: HTTPConnection, reused: Bool, requirements: ATSRequirements, redirectCount: Int
    ) -> (Data, HTTPURLResponse) {
        // A large body is handed over without a copy (Data keeps the buffer's storage alive).
        let data = Data(buffer: raw.body, byteTransferStrategy: .automatic)
        let metrics = URLSessionTaskTransactionMetrics(
            networkProtocolName: connection.facts.protocolName, negotiatedTLSProtocolVersion: connection.facts.tlsVersion,
            isReusedConnection: reused, remoteAddress: connection.channel.remoteAddress?.ipAddress, serverCertificate: connection.facts.certificate,
            appTransportSecurity: requirements, redirectCount: redirectCount)
        let response = HTTPURLResponse(
            url: url, statusCode: Int(raw.head.status.code), headerFields: raw.head.headers.map { ($0.name, $0.value) }, metrics: metrics)
        return (data, response)
    }

    static func loadError(_ error: any Error) -> HTTPLoadError {
        if let failure = error as? HTTPLoadError { return failure }
        if let closed = error as? ConnectionClosedBeforeAnswer {
            return .badServerResponse(url: closed.url, reason: "the connection closed before any answer")
        }
        if error is CancellationError { return .cancelled }
        return .cannotConnect(host: "the server", reason: "\(error)")
    }
}
