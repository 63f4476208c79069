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
/// token for another origin is refused — unless `acceptsAnyChallenge` (Apple's way: its clients
/// make their own challenge when they fetch tokens ahead of time, and its server checks the
/// token's type, key, signature and nonce only).
///
/// The issuer's keys come from its directory (RFC 9578 §4), fetched again every
/// `refreshInterval` seconds. A failed fetch, or a directory listing no token key, keeps the
/// keys already held and is retried after a backoff (5 s, doubling up to a minute) — also
/// while no key is held yet, so a dead issuer costs one fetch per backoff, not one per
/// request. Spent nonces outlive their key's presence in the directory by `retention` seconds
/// (`SpentTokenStore`): no directory answer makes a spent token good again.
public final class PrivateTokenVerifier: HTTPRequestAuthorizer {
    public let challenge: TokenChallenge
    /// Whether tokens made for other challenges of this issuer are accepted too.
    public let acceptsAnyChallenge: Bool
    let directoryURL: URL
    let refreshInterval: Double
    let retention: UInt64
    let spent: SpentTokenStore
    let upstream: HTTPUpstream
    let logger: Logger

    private struct State {
        var keys: [HeldKey] = []
        var challengeKey: [UInt8]?
        /// When the next directory fetch is due (Unix seconds).
        var nextFetch = 0.0
        var fetching = false
        var failures = 0
        var counts: [String: Int] = [:]
    }
    private let state = Mutex(State())

    /// An issuer key in service, with its id.
    private struct HeldKey {
        let id: [UInt8]
        let der: [UInt8]
        let notBefore: UInt64
    }

    /// - Parameters:
    ///   - refreshInterval: seconds between directory fetches that succeed.
    ///   - retention: seconds a key's spent nonces are kept after the key left the directory
    ///     (a week by default; it is refused for good afterwards).
    ///   - fetchTimeout: seconds one directory fetch may take.
    ///   - tls: whom an `https` directory URL must prove itself to (default: the system's trust
    ///     store).
    ///   - acceptsAnyChallenge: accept tokens of this issuer's keys whatever challenge they were
    ///     made for (for Apple's clients, which fetch tokens without asking this origin).
    public init(
        issuerName: String, originName: String, directoryURL: URL, spent: SpentTokenStore,
        refreshInterval: Double = 300, retention: UInt64 = 7 * 86400, fetchTimeout: Double = 10, tls: ClientTLS? = nil,
        acceptsAnyChallenge: Bool = false, logger: Logger
    ) {
        challenge = TokenChallenge(issuerName: issuerName, originInfo: [originName])
        self.acceptsAnyChallenge = acceptsAnyChallenge
        self.directoryURL = directoryURL
        self.refreshInterval = refreshInterval
        self.retention = retention
        self.spent = spent
        upstream = HTTPUpstream(timeout: fetchTimeout, tls: tls)
        self.logger = logger
    }

    /// Issuer keys currently accepted (SubjectPublicKeyInfo DER).
    public var keys: [[UInt8]] { state.withLock { $0.keys.map(\.der) } }

    /// Counts by outcome ("accepted", "missing", "invalid", "spent", "no-keys", "store-failed").
    public var outcomes: [String: Int] { state.withLock { $0.counts } }

    /// Directory fetches that failed in a row (0 after a success).
    public var consecutiveFetchFailures: Int { state.withLock { $0.failures } }

    /// Fetches the issuer's directory now; keeps the previous keys when that fails. Returns
    /// whether the directory was taken in.
    @discardableResult
    public func refreshKeys() async -> Bool {
        state.withLock { $0.fetching = true }
        let taken = await fetchDirectory()
        let now = Date().timeIntervalSince1970
        state.withLock {
            $0.fetching = false
            if taken {
                $0.failures = 0
                $0.nextFetch = now + refreshInterval
            } else {
                $0.failures += 1
                $0.nextFetch = now + min(5 * pow(2, Double(min($0.failures - 1, 4))), 60, refreshInterval)
            }
        }
        return taken
    }

    private func fetchDirectory() async -> Bool {
        let response = await upstream.send(method: "GET", url: directoryURL, headers: [("Accept", IssuerDirectory.mediaType)], body: [])
        guard response.status == 200 else {
            logger.warning("issuer directory unavailable; keeping the previous keys", metadata: ["status": "\(response.status)"])
            return false
        }
        let directory: IssuerDirectory
        do throws(PrivacyPassError) { directory = try IssuerDirectory(decoding: response.body) } catch {
            logger.warning("issuer directory refused; keeping the previous keys", metadata: ["error": "\(error)"])
            return false
        }
        // Each key's id (a SHA-256 of its DER) is computed here once, not per request.
        let listed = directory.tokenKeys.filter { $0.tokenType == PrivateToken.blindRSAType }.compactMap { key in
            key.publicKeyDER.map { HeldKey(id: PrivateToken.keyID(publicKeyDER: $0), der: $0, notBefore: key.notBefore ?? 0) }
        }
        guard !listed.isEmpty else {
            logger.warning("issuer directory lists no token key; keeping the previous keys")
            return false
        }
        let changes: SpentTokenStore.KeyChanges
        do { changes = try spent.observeKeys(listed: listed.map(\.id), retention: retention) } catch {
            logger.error("spent-token store failed; keeping the previous keys", metadata: ["error": "\(error)"])
            return false
        }
        if changes.expired > 0 {
            logger.info("issuer keys expired", metadata: ["keys": "\(changes.expired)", "nonces_forgotten": "\(changes.forgottenNonces)"])
        }
        let acceptable = Set(changes.acceptable)
        let fresh = listed.filter { acceptable.contains($0.id) }
        if fresh.count < listed.count { logger.warning("issuer directory lists expired keys; they stay refused", metadata: ["keys": "\(listed.count - fresh.count)"]) }
        guard let lastListed = fresh.last else { return false }
        // The key challenges name: the newest whose not-before has passed (RFC 9578 §4), else
        // the last listed.
        let now = UInt64(Date().timeIntervalSince1970)
        let current = fresh.filter { $0.notBefore <= now }.max { $0.notBefore < $1.notBefore } ?? lastListed
        state.withLock {
            $0.keys = fresh
            $0.challengeKey = current.der
        }
        return true
    }

    /// Whether a directory fetch is due now; marks it started so that concurrent requests do
    /// not start their own.
    private func claimFetch() -> Bool {
        state.withLock {
            guard !$0.fetching, Date().timeIntervalSince1970 >= $0.nextFetch else { return false }
            $0.fetching = true
            return true
        }
    }

    public func authorize(_ request: HTTPServerRequest) async -> HTTPServerResponse? {
        if claimFetch() { await refreshKeys() }
        let (keys, current) = state.withLock { ($0.keys, $0.challengeKey) }
        guard let challengeKey = current else {
            count("no-keys")
            return .text(503, "the issuer's keys are unavailable")
        }
        let token: PrivateToken
        switch verifiedToken(request.header("Authorization"), keys: keys, challengeKey: challengeKey) {
        case .success(let verified): token = verified
        case .failure(let refusal): return refusal.response
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

    /// The check of a request head, before its body is read: a token must be present and
    /// verify under a key held now. Nothing is spent and nothing fetched (`authorize` does both
    /// once the body is in); with no key held yet, the body is read and `authorize` decides.
    public func precheck(headers: [(name: String, value: String)]) -> HTTPServerResponse? {
        let (keys, current) = state.withLock { ($0.keys, $0.challengeKey) }
        guard let challengeKey = current else { return nil }
        let header = headers.first(where: { $0.name.lowercased() == "authorization" })?.value
        if case .failure(let refusal) = verifiedToken(header, keys: keys, challengeKey: challengeKey) { return refusal.response }
        return nil
    }

    /// Why a request's token was refused: the response to send (401 with a challenge).
    private struct Refusal: Error { let response: HTTPServerResponse }

    /// The token of an `Authorization` header, if it parses, names a key held and verifies for
    /// this origin's challenge (not yet checked against the spent nonces).
    private func verifiedToken(_ header: String?, keys: [HeldKey], challengeKey: [UInt8]) -> Result<PrivateToken, Refusal> {
        guard let header else { return .failure(Refusal(response: refuse("missing", "a Privacy Pass token is required", key: challengeKey))) }
        let token: PrivateToken
        do throws(PrivacyPassError) {
            guard let parsed = try PrivateTokenHeader.parseAuthorization(header) else {
                return .failure(Refusal(response: refuse("missing", "a Privacy Pass token is required", key: challengeKey)))
            }
            token = parsed
        } catch { return .failure(Refusal(response: refuse("invalid", "\(error)", key: challengeKey))) }
        guard let key = keys.first(where: { $0.id == token.tokenKeyID })?.der else {
            return .failure(Refusal(response: refuse("invalid", "the token's key is not one the issuer publishes", key: challengeKey)))
        }
        guard token.verify(publicKeyDER: key, challenge: acceptsAnyChallenge ? nil : challenge) else {
            return .failure(Refusal(response: refuse("invalid", "the token does not verify for this origin's challenge", key: challengeKey)))
        }
        return .success(token)
    }

    private func refuse(_ outcome: String, _ message: String, key: [UInt8]) -> HTTPServerResponse {
        count(outcome)
        return .text(401, message, headers: [("WWW-Authenticate", PrivateTokenHeader.challenge(challenge, tokenKeyDER: key))])
    }

    private func count(_ outcome: String) { state.withLock { $0.counts[outcome, default: 0] += 1 } }
}
