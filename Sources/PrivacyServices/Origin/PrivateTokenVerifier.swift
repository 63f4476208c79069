import Foundation
import HTTPServing
import Logging
import PrivacyPass
import Synchronization

/// The origin's side of Privacy Pass (RFC 9577): every request must carry
/// `Authorization: PrivateToken token=…` for this origin's challenge, signed under a key the
/// issuer currently publishes, with a nonce never spent before. Requests without one get 401
/// and `WWW-Authenticate: PrivateToken challenge=…, token-key=…`. The challenge has no
/// redemption context (clients may fetch tokens ahead of time) and names this origin, so a
/// token for another origin is refused. The issuer's keys come from its directory, refreshed
/// every `refreshInterval` seconds; nonces of keys the issuer retired are forgotten.
public final class PrivateTokenVerifier: HTTPRequestAuthorizer {
    public let challenge: TokenChallenge
    let directoryURL: URL
    let refreshInterval: Double
    let spent: SpentTokenStore
    let upstream: HTTPUpstream
    let logger: Logger
    private let state = Mutex((keys: [[UInt8]](), challengeKey: [UInt8]?.none, fetched: 0.0, counts: [String: Int]()))

    public init(issuerName: String, originName: String, directoryURL: URL, spent: SpentTokenStore, refreshInterval: Double = 300, logger: Logger) {
        challenge = TokenChallenge(issuerName: issuerName, originInfo: [originName])
        self.directoryURL = directoryURL
        self.refreshInterval = refreshInterval
        self.spent = spent
        upstream = HTTPUpstream(timeout: 10)
        self.logger = logger
    }

    /// Issuer keys currently accepted (SubjectPublicKeyInfo DER).
    public var keys: [[UInt8]] { state.withLock { $0.keys } }

    /// Counts by outcome ("accepted", "missing", "invalid", "spent", "no-keys").
    public var outcomes: [String: Int] { state.withLock { $0.counts } }

    /// Fetches the issuer's directory now; keeps the previous keys when that fails.
    @discardableResult
    public func refreshKeys() async -> Bool {
        // Whatever happens, the next attempt waits at least 5 s (a dead issuer must not add a
        // fetch to every request).
        let refreshInterval = self.refreshInterval
        state.withLock { $0.fetched = max($0.fetched, Date().timeIntervalSince1970 - refreshInterval + 5) }
        let response = await upstream.send(method: "GET", url: directoryURL, headers: [("Accept", IssuerDirectory.mediaType)], body: [])
        guard response.status == 200 else {
            logger.warning("issuer directory unavailable; keeping the previous keys", metadata: ["status": "\(response.status)"])
            return false
        }
        let directory: IssuerDirectory
        do throws(PrivacyPassError) { directory = try IssuerDirectory(decoding: response.body) } catch {
            logger.warning("issuer directory refused", metadata: ["error": "\(error)"])
            return false
        }
        let fresh = directory.tokenKeys.filter { $0.tokenType == PrivateToken.blindRSAType }.compactMap(\.publicKeyDER)
        let current = directory.currentKey(now: UInt64(Date().timeIntervalSince1970))
        state.withLock {
            $0.keys = fresh
            $0.challengeKey = current
            $0.fetched = Date().timeIntervalSince1970
        }
        do { try spent.forgetKeys(except: fresh.map { PrivateToken.keyID(publicKeyDER: $0) }) } catch {
            logger.error("cannot prune spent tokens", metadata: ["error": "\(error)"])
        }
        return true
    }

    public func authorize(_ request: HTTPServerRequest) async -> HTTPServerResponse? {
        let stale = state.withLock { Date().timeIntervalSince1970 - $0.fetched > refreshInterval || $0.keys.isEmpty }
        if stale { await refreshKeys() }
        let (keys, current) = state.withLock { ($0.keys, $0.challengeKey) }
        guard let challengeKey = current else {
            count("no-keys")
            return .text(503, "the issuer's keys are unavailable")
        }
        guard let header = request.header("Authorization") else { return refuse("missing", "a Privacy Pass token is required", key: challengeKey) }
        let token: PrivateToken
        do throws(PrivacyPassError) {
            guard let parsed = try PrivateTokenHeader.parseAuthorization(header) else {
                return refuse("missing", "a Privacy Pass token is required", key: challengeKey)
            }
            token = parsed
        } catch { return refuse("invalid", "\(error)", key: challengeKey) }
        guard let key = keys.first(where: { PrivateToken.keyID(publicKeyDER: $0) == token.tokenKeyID }) else {
            return refuse("invalid", "the token's key is not one the issuer publishes", key: challengeKey)
        }
        guard token.verify(publicKeyDER: key, challenge: challenge) else {
            return refuse("invalid", "the token does not verify for this origin's challenge", key: challengeKey)
        }
        do {
            guard try spent.spend(nonce: token.nonce, keyID: token.tokenKeyID) else {
                return refuse("spent", "this token was already redeemed", key: challengeKey)
            }
        } catch {
            logger.error("spent-token store failed", metadata: ["error": "\(error)"])
            count("store-failed")
            return .text(503, "cannot record the token")
        }
        count("accepted")
        return nil
    }

    private func refuse(_ outcome: String, _ message: String, key: [UInt8]) -> HTTPServerResponse {
        count(outcome)
        return .text(401, message, headers: [("WWW-Authenticate", PrivateTokenHeader.challenge(challenge, tokenKeyDER: key))])
    }

    private func count(_ outcome: String) { state.withLock { $0.counts[outcome, default: 0] += 1 } }
}
