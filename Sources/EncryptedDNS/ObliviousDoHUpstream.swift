import NIOCore
import NetExtCore
import ObliviousHTTP

/// Oblivious DNS over HTTPS (RFC 9230): queries are sealed to the target's key and posted to a
/// proxy, which forwards them to the target without anything about this machine; the target
/// sees names but not the machine, the proxy the machine but not the names. The connection to
/// the proxy is a ``DNSOverHTTPSUpstream``'s (HTTP/2 to the proxy's address, its name checked
/// against its certificate, never looked up); each query is one stream of it, posted to
/// `proxy-path?targethost=…&targetpath=…` (§4.1).
///
/// The target's configuration is the one given (pinned), or is fetched through the proxy
/// (`GET /odohconfigs?targethost=…`, NetExt's proxy; the target never sees this machine) on
/// first use and again when the target answers 401 (§4.3: its keys changed).
public final class ObliviousDoHUpstream: EncryptedDNSUpstream, @unchecked Sendable {
    // @unchecked: `fetched` and `fetching` are touched only on `eventLoop`.
    public let serverDescription: String
    public var eventLoop: any EventLoop { proxy.eventLoop }
    let proxy: DNSOverHTTPSUpstream
    let targetHost: String
    let targetPath: String
    let pinned: ObliviousDoHConfig?
    private var fetched: ObliviousDoHConfig?
    private var fetching: EventLoopFuture<ObliviousDoHConfig>?

    /// - Parameters:
    ///   - proxyURL: the proxy's URL (`https://proxy[:port]/path`).
    ///   - address: the proxy's IP address.
    ///   - targetURL: the target's DoH URL (`https://target[:port]/path`); its name is sent to
    ///     the proxy, never looked up here.
    ///   - configs: the target's `ObliviousDoHConfigs` (pinned), nil to fetch them through the proxy.
    public init(
        proxyURL: String, address: [UInt8], targetURL: String, configs: [UInt8]?, trust: DNSServerTrust = .system, mark: UInt32? = nil,
        eventLoop: any EventLoop
    ) throws(EncryptedDNSError) {
        guard let target = DoHURL(targetURL) else {
            throw .connectFailed(server: targetURL, reason: "'\(targetURL)' is not an https URL with a host name")
        }
        targetHost = target.port == 443 ? target.host : "\(target.host):\(target.port)"
        targetPath = target.path
        proxy = try DNSOverHTTPSUpstream(url: proxyURL, address: address, trust: trust, mark: mark, eventLoop: eventLoop)
        serverDescription = "\(targetURL) through \(proxy.serverDescription)"
        if let configs {
            do throws(ObliviousHTTPError) { pinned = try ObliviousDoHConfig.decodeList(configs).first } catch {
                throw .obliviousFailure(server: serverDescription, reason: "the target's configuration cannot be used: \(error)")
            }
        } else {
            pinned = nil
        }
    }

    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        // On the loop already (a query read there): started at once, not a turn later.
        eventLoop.inEventLoop ? start(query, timeoutMilliseconds: timeoutMilliseconds, refetched: false) : eventLoop.flatSubmit { self.start(query, timeoutMilliseconds: timeoutMilliseconds, refetched: false) }
    }

    public func shutdown() { proxy.shutdown() }

    /// `path?targethost=…&targetpath=…`, each value percent-encoded (RFC 6570 form-style).
    var queryPath: String {
        "\(proxy.path)?targethost=\(Self.encoded(targetHost))&targetpath=\(Self.encoded(targetPath))"
    }

    // MARK: On the event loop

    private func start(_ query: [UInt8], timeoutMilliseconds: Int, refetched: Bool) -> EventLoopFuture<[UInt8]> {
        let prepared: DoHWireQuery
        do { prepared = try DoHWireQuery(query) } catch { return eventLoop.makeFailedFuture(error) }
        let server = serverDescription
        return configuration(timeoutMilliseconds: timeoutMilliseconds).flatMap { config -> EventLoopFuture<[UInt8]> in
            let sealed: (message: [UInt8], context: ObliviousDoH.ClientContext)
            do throws(ObliviousHTTPError) { sealed = try ObliviousDoH.sealQuery(prepared.wire, config: config) } catch {
                return self.eventLoop.makeFailedFuture(EncryptedDNSError.obliviousFailure(server: server, reason: "\(error)"))
            }
            return self.proxy.send(method: "POST", path: self.queryPath, body: sealed.message, mediaType: ObliviousDoH.mediaType, timeoutMilliseconds: timeoutMilliseconds)
                .flatMapThrowing { body -> [UInt8] in
                    let answer: [UInt8]
                    do throws(ObliviousHTTPError) { answer = try sealed.context.openResponse(body) } catch {
                        throw EncryptedDNSError.obliviousFailure(server: server, reason: "the answer cannot be opened (\(error))")
                    }
                    return try prepared.answer(answer, server: server)
                }
        }.flatMapError { error -> EventLoopFuture<[UInt8]> in
            // 401: the target no longer holds the key (§4.3); fetch its configuration once more.
            if !refetched, self.pinned == nil, case .httpStatus(_, 401)? = error as? EncryptedDNSError {
                self.fetched = nil
                return self.start(query, timeoutMilliseconds: timeoutMilliseconds, refetched: true)
            }
            return self.eventLoop.makeFailedFuture(error)
        }
    }

    /// The pinned configuration, the one fetched before, or one fetched now (queries arriving
    /// meanwhile wait for the same fetch).
    private func configuration(timeoutMilliseconds: Int) -> EventLoopFuture<ObliviousDoHConfig> {
        if let config = pinned ?? fetched { return eventLoop.makeSucceededFuture(config) }
        if let fetching { return fetching }
        let server = serverDescription
        let fetch = proxy.send(
            method: "GET", path: "/odohconfigs?targethost=\(Self.encoded(targetHost))", body: [], mediaType: "application/octet-stream",
            timeoutMilliseconds: timeoutMilliseconds
        ).flatMapThrowing { body -> ObliviousDoHConfig in
            do throws(ObliviousHTTPError) {
                guard let config = try ObliviousDoHConfig.decodeList(body).first else { throw .invalidKeyConfig("empty") }
                return config
            } catch { throw EncryptedDNSError.obliviousFailure(server: server, reason: "the target's configuration cannot be used: \(error)") }
        }
        fetching = fetch
        fetch.whenComplete { [self] result in
            fetching = nil
            if case .success(let config) = result { fetched = config }
        }
        return fetch
    }

    /// Percent-encodes all but RFC 3986's unreserved characters.
    static func encoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let char = Character(Unicode.Scalar(byte))
            if char.isASCII && (char.isLetter || char.isNumber || "-._~".contains(char)) {
                out.append(char)
            } else {
                let digits = Array("0123456789ABCDEF")
                out += "%\(digits[Int(byte >> 4)])\(digits[Int(byte & 0x0F)])"
            }
        }
        return out
    }
}
