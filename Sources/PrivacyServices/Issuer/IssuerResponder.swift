import Foundation
import HTTPServing
import PrivacyPass
import Synchronization

/// The Privacy Pass issuer's HTTP face (RFC 9578 §4–§6, with the endpoints Apple's URL filter
/// clients use):
/// - `GET /.well-known/private-token-issuer-directory`: the directory of keys in service;
/// - `GET /token-key-for-user-token` (Bearer): the key this credential's tokens are issued under;
/// - `POST /issue` (Bearer, `application/private-token-request`): one TokenRequest (RFC 9578
///   §6.1), or several concatenated (a NetExt batch: requests of type 0x0002 have a fixed
///   length), answered by the blind signatures in the same order.
/// The issuer sees credentials and blinded messages only: it cannot link a token to its
/// redemption, and it never sees an origin or a challenge.
///
/// A request is checked whole before anything is charged to its credential: every token
/// request must parse, name a key in service and carry a blinded message other than 0 or 1
/// (whose signatures are themselves); a blinded message signed within the replay window
/// (`IssuanceReplayWindow`) refuses the request (409). Only then are tokens taken from the
/// credential's bucket and signed.
public struct IssuerResponder: HTTPResponder {
    public static let requestMediaType = "application/private-token-request"
    public static let responseMediaType = "application/private-token-response"
    public static let maximumBatch = 64
    /// Bytes of one token request (RFC 9578 §6.1: type, key id byte, blinded message).
    public static let requestLength = 3 + PrivateToken.authenticatorLength

    public let keys: IssuerKeyRing
    /// The credentials accepted now (``replaceCredentials(_:)`` swaps them at a reload).
    public var credentials: BearerCredentials { accepted.value }
    private let accepted: CurrentCredentials
    public let limiter: IssuanceRateLimiter
    public let replays: IssuanceReplayWindow
    let metrics: IssuerMetrics

    public init(
        keys: IssuerKeyRing, credentials: BearerCredentials, limiter: IssuanceRateLimiter, replays: IssuanceReplayWindow = IssuanceReplayWindow(),
        metrics: IssuerMetrics = IssuerMetrics()
    ) {
        self.keys = keys
        accepted = CurrentCredentials(credentials)
        self.limiter = limiter
        self.replays = replays
        self.metrics = metrics
    }

    /// Sets the keys gauge (called before each rendering of the metrics).
    public func sampleMetrics() { metrics.keys.record(keys.keys.count) }

    /// Accepts `fresh` from the next request on (a reload of the credentials file). A credential
    /// that stays keeps its rate-limit bucket (buckets follow ``BearerCredentials/identity(at:)``).
    public func replaceCredentials(_ fresh: BearerCredentials) { accepted.value = fresh }

    static let endpoints = [IssuerDirectory.wellKnownPath, "/token-key-for-user-token", "/issue"]

    public func bodyLimit(method: String, path: String) -> Int { path == "/issue" ? Self.maximumBatch * Self.requestLength : 0 }

    public func endpointLabel(path: String) -> String { Self.endpoints.contains(path) ? path : "other" }

    public func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        let now = UInt64(Date().timeIntervalSince1970)
        switch (request.method, request.path) {
        case ("GET", IssuerDirectory.wellKnownPath):
            return HTTPServerResponse(contentType: IssuerDirectory.mediaType, body: keys.directoryDocument(requestURI: "/issue").encoded(),
                                      headers: [("Cache-Control", "max-age=300")])
        case ("GET", "/token-key-for-user-token"):
            guard credentials.match(authorization: request.header("Authorization")) != nil else { return Self.unauthorized }
            guard let key = keys.currentKey(now: now) else { return .text(503, "no token key in service") }
            return HTTPServerResponse(contentType: "application/octet-stream", body: key.publicKeyDER)
        case ("POST", "/issue"):
            return issue(request)
        case (_, let path) where Self.endpoints.contains(path):
            return .text(405, "\(path) does not take \(request.method)")
        default:
            return .text(404, "no such endpoint \(request.path)")
        }
    }

    /// Whether a blinded message is the integer 0 or 1 (big-endian).
    static func isTrivial(_ message: [UInt8]) -> Bool {
        guard let last = message.last, last <= 1 else { return false }
        return message.dropLast().allSatisfy { $0 == 0 }
    }

    static let unauthorized = HTTPServerResponse.text(401, "a valid credential is required (Authorization: Bearer …)", headers: [("WWW-Authenticate", "Bearer")])

    func issue(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let accepted = credentials
        guard let index = accepted.match(authorization: request.header("Authorization")) else { return Self.unauthorized }
        let credential = accepted.identity(at: index)
        guard request.header("Content-Type")?.lowercased().hasPrefix(Self.requestMediaType) == true else {
            return .text(415, "Content-Type must be \(Self.requestMediaType)")
        }
        let body = request.body
        guard !body.isEmpty, body.count % Self.requestLength == 0 else {
            return .text(400, "body of \(body.count) bytes is not a whole number of \(Self.requestLength)-byte token requests")
        }
        let count = body.count / Self.requestLength
        // Everything is checked before the credential is charged.
        var signing: [(key: IssuerKey, request: BlindRSAIssuance.TokenRequest)] = []
        signing.reserveCapacity(count)
        for index in 0..<count {
            let bytes = Array(body[(index * Self.requestLength)..<((index + 1) * Self.requestLength)])
            do throws(PrivacyPassError) {
                let tokenRequest = try BlindRSAIssuance.TokenRequest(decoding: bytes)
                guard let key = keys.keys(truncatedKeyID: tokenRequest.truncatedKeyID).first else {
                    metrics.refusedMalformed.increment()
                    return .text(400, "token request \(index): no key in service has truncated id \(tokenRequest.truncatedKeyID)")
                }
                if Self.isTrivial(tokenRequest.blindedMessage) {
                    metrics.refusedMalformed.increment()
                    return .text(400, "token request \(index): the blinded message is 0 or 1")
                }
                signing.append((key, tokenRequest))
            } catch {
                metrics.refusedMalformed.increment()
                return .text(400, "token request \(index): \(error)")
            }
        }
        let digests = IssuanceReplayWindow.digests(signing.map(\.request.blindedMessage))
        if replays.containsAny(digests) {
            metrics.refusedReplay.increment()
            return .text(409, "this token request was already answered (a replay); nothing was charged")
        }
        if let wait = limiter.take(count, credential: credential) {
            metrics.rateLimited.increment()
            return .text(429, "issuance limit reached for this credential", headers: wait == Int.max ? [] : [("Retry-After", String(wait))])
        }
        guard replays.record(digests) else {
            metrics.refusedReplay.increment()
            return .text(409, "this token request was already answered (a replay)")
        }
        var out: [UInt8] = []
        out.reserveCapacity(count * PrivateToken.authenticatorLength)
        for (index, item) in signing.enumerated() {
            do throws(PrivacyPassError) { out += try item.key.respond(to: item.request) } catch {
                return .text(400, "token request \(index): \(error)")
            }
        }
        metrics.tokensIssued.increment(by: count)
        return HTTPServerResponse(contentType: Self.responseMediaType, body: out)
    }
}

/// The issuer's credentials, replaceable while it serves.
final class CurrentCredentials: Sendable {
    private let stored: Mutex<BearerCredentials>
    init(_ credentials: BearerCredentials) { stored = Mutex(credentials) }
    var value: BearerCredentials {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
