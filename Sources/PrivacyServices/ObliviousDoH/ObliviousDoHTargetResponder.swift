import Foundation
import HTTPServing
import NetExtCore
import ObliviousHTTP

/// The Oblivious DoH target (RFC 9230 §8): `POST /dns-query` with
/// `application/oblivious-dns-message` is opened with the target's keys, its DNS query answered
/// by `resolve` (the resolver behind the target), and the answer sealed back under the query's
/// context. `GET /.well-known/odohconfigs` publishes the keys' configurations. The target sees
/// the proxy's connection and the names, never the client; it logs neither.
///
/// A query for a key it does not hold is answered 401 (§4.3, §8: the client fetches the
/// configuration again), one it cannot open or parse 400; a resolver that gives no answer
/// becomes a sealed SERVFAIL (a valid DNS answer, 200 as in RFC 8484).
public struct ObliviousDoHTargetResponder: HTTPResponder {
    public static let configsPath = "/.well-known/odohconfigs"
    /// RFC 8467 §4.1: responses padded to blocks of 468 bytes.
    static let responsePaddingBlock = 468

    public let keys: ObliviousDoHKeyRing
    public let queryPath: String
    let resolve: @Sendable ([UInt8]) async -> [UInt8]?
    let metrics: ObliviousDoHTargetMetrics

    /// - Parameter resolve: answers one DNS query (the whole message), nil when no answer came.
    public init(
        keys: ObliviousDoHKeyRing, queryPath: String = "/dns-query", metrics: ObliviousDoHTargetMetrics = ObliviousDoHTargetMetrics(),
        resolve: @escaping @Sendable ([UInt8]) async -> [UInt8]?
    ) {
        self.keys = keys
        self.queryPath = queryPath
        self.resolve = resolve
        self.metrics = metrics
    }

    public func bodyLimit(method: String, path: String) -> Int { path == queryPath ? ObliviousDoH.maximumMessageBytes : 0 }

    public func requiredContentType(method: String, path: String) -> String? {
        method == "POST" && path == queryPath ? ObliviousDoH.mediaType : nil
    }

    public func endpointLabel(path: String) -> String { path == queryPath ? "/dns-query" : path == Self.configsPath ? path : "other" }

    public func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        switch (request.method, request.path) {
        case ("GET", Self.configsPath):
            return HTTPServerResponse(
                contentType: "application/octet-stream", body: keys.publishedConfigs(now: UInt64(Date().timeIntervalSince1970)),
                headers: [("Cache-Control", "max-age=3600")])
        case ("POST", queryPath):
            return await answer(request.body)
        case (_, queryPath), (_, Self.configsPath):
            return .text(405, "\(request.path) does not take \(request.method)")
        default:
            return .text(404, "no such endpoint \(request.path)")
        }
    }

    func answer(_ body: [UInt8]) async -> HTTPServerResponse {
        let opened: (dns: [UInt8], context: ObliviousDoH.TargetContext)
        let question: DNSQuery
        do throws(ObliviousHTTPError) {
            opened = try ObliviousDoH.openQuery(body, keys: keys.keys.map(\.key))
        } catch .unknownObliviousDoHKey {
            metrics.unknownKey.increment()
            return .text(401, "the query is sealed to a key this target does not hold; fetch \(Self.configsPath) again")
        } catch {
            metrics.refused.increment()
            return .text(400, "cannot open the query: \(error)")
        }
        do throws(DNSParseError) { question = try DNSQuery(parsing: opened.dns) } catch {
            metrics.refused.increment()
            return .text(400, "the sealed message is not a DNS query: \(error)")
        }
        let reply: [UInt8]
        if let answer = await resolve(opened.dns) {
            reply = answer
            metrics.answered.increment()
        } else {
            reply = question.serverFailure(for: opened.dns)
            metrics.resolverFailed.increment()
        }
        let padding = (Self.responsePaddingBlock - (reply.count + 4) % Self.responsePaddingBlock) % Self.responsePaddingBlock
        do throws(ObliviousHTTPError) {
            return HTTPServerResponse(
                contentType: ObliviousDoH.mediaType, body: try opened.context.sealResponse(reply, padding: padding),
                headers: [("Cache-Control", "no-cache, no-store")])
        } catch {
            return .text(500, "cannot seal the answer")
        }
    }
}
