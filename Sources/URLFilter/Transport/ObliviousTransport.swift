import Foundation
import ObliviousHTTP
import Synchronization

/// Sends each request through an Oblivious HTTP relay (RFC 9458): the request becomes a
/// Binary HTTP message (RFC 9292) encapsulated for the gateway's key, posted to the relay; the
/// relay sees the client's address but not the content, the gateway and the service see the
/// content but not the client. The gateway's key configuration is fetched through the relay
/// and fetched again when the gateway no longer knows the key.
public final class ObliviousTransport: ServiceTransport {
    public let relayURL: URL
    public let keysURL: URL
    let outer: DirectTransport
    private let config = Mutex<OHTTPKeyConfig?>(nil)

    /// `relayURL` is the relay's `/relay` endpoint; `keysURL` (default: `/ohttp-keys` beside it)
    /// serves the gateway's key configurations.
    public init(relayURL: URL, keysURL: URL? = nil, timeout: Double = 30) {
        self.relayURL = relayURL
        self.keysURL = keysURL ?? relayURL.deletingLastPathComponent().appendingPathComponent("ohttp-keys")
        outer = DirectTransport(timeout: timeout)
    }

    /// The key configuration in use, fetched when missing.
    public func keyConfig(refresh: Bool = false) async throws(URLFilterError) -> OHTTPKeyConfig {
        if !refresh, let cached = config.withLock({ $0 }) { return cached }
        let answer = try await outer.send(ServiceRequest(method: "GET", url: keysURL, headers: [("Accept", OHTTPKeyConfig.listMediaType)]))
        guard answer.status == 200 else { throw .server(status: answer.status, message: "key configurations: \(answer.message)") }
        let configs: [OHTTPKeyConfig]
        do throws(ObliviousHTTPError) { configs = try OHTTPKeyConfig.decodeList(answer.body) } catch { throw .protocolMismatch("key configurations: \(error)") }
        guard let first = configs.first else { throw .protocolMismatch("the gateway offers no key configuration this client supports") }
        config.withLock { $0 = first }
        return first
    }

    public func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
        do { return try await attempt(request, refresh: false) } catch let error {
            // A gateway that rotated its keys answers 400 in the clear: fetch them once more.
            guard case .server(400, _) = error else { throw error }
            return try await attempt(request, refresh: true)
        }
    }

    private func attempt(_ request: ServiceRequest, refresh: Bool) async throws(URLFilterError) -> ServiceResponse {
        let key = try await keyConfig(refresh: refresh)
        guard let scheme = request.url.scheme, let host = request.url.host else { throw .transport("\(request.url) has no scheme or host") }
        let authority = request.url.port.map { "\(host):\($0)" } ?? host
        var path = request.url.path.isEmpty ? "/" : request.url.path
        if let query = request.url.query { path += "?" + query }
        let inner = BinaryHTTPRequest(method: request.method, scheme: scheme, authority: authority, path: path,
                                      headers: request.headers.map { ($0.name.lowercased(), $0.value) }, content: request.body)
        let sealed: (message: [UInt8], context: ObliviousHTTP.ClientContext)
        do throws(ObliviousHTTPError) { sealed = try ObliviousHTTP.encapsulateRequest(inner.encoded(), config: key) } catch {
            throw .protocolMismatch("encapsulation: \(error)")
        }
        let answer = try await outer.send(ServiceRequest(method: "POST", url: relayURL, headers: [("Content-Type", "message/ohttp-req")], body: sealed.message))
        guard answer.status == 200 else { throw .server(status: answer.status, message: "relay: \(answer.message)") }
        guard answer.header("Content-Type")?.lowercased() == "message/ohttp-res" else {
            throw .protocolMismatch("relay answered \(answer.header("Content-Type") ?? "no Content-Type") instead of message/ohttp-res")
        }
        do throws(ObliviousHTTPError) {
            let response = try BinaryHTTPResponse(decoding: try sealed.context.openResponse(answer.body))
            return ServiceResponse(status: response.status, headers: response.headers.map { (name: $0.0, value: $0.1) }, body: response.content)
        } catch { throw .protocolMismatch("encapsulated response: \(error)") }
    }
}
