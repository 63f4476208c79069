import Foundation

/// Fetches Privacy Pass tokens (RFC 9578 type 0x0002) from the issuer in batches, through any
/// transport (the URL filter uses an Oblivious HTTP one, the relay client a direct HTTPS one),
/// presenting the long-term credential as `Authorization: Bearer …`; keeps the unused ones in a
/// ``PrivateTokenCache`` (a file for the URL filter, memory for the relay provider). Before using an
/// origin's token key it checks that the issuer publishes it, so an origin cannot single a
/// client out with a key of its own (RFC 9576 §6.2 key consistency).
///
/// An issuer that takes one token request per `POST` (Apple's pir-service-example reads exactly
/// one and refuses more with 413) is noticed on the first refusal; from then on a batch is that
/// many single requests sent at once.
public actor PrivacyPassClient {
    /// Why no token could be had; each case a sentence for people.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The issuer answered with this status.
        case server(status: Int, message: String)
        /// The issuer could not be reached.
        case transport(String)
        /// The issuer's answer, or the origin's challenge, is not what Privacy Pass allows.
        case protocolMismatch(String)
        /// The token cache could not be read or written.
        case cache(String)

        public var description: String {
            switch self {
            case let .server(status, message): "server answered \(status): \(message)"
            case let .transport(reason): "cannot reach the issuer: \(reason)"
            case let .protocolMismatch(reason): "unexpected answer: \(reason)"
            case let .cache(reason): "the token cache failed: \(reason)"
            }
        }
    }

    public nonisolated let issuerURL: URL
    public let batchSize: Int
    let credential: String
    let transport: any PrivacyPassIssuerTransport
    public let store: any PrivateTokenCache
    var directory: (value: IssuerDirectory, fetched: Date)?
    /// Tokens obtained from the issuer so far (for status and tests).
    public private(set) var fetchedTokens = 0
    /// When fewer tokens than this are left for a challenge after one is taken, the next batch
    /// is fetched in the background, so the next caller need not wait for the issuer (0: only
    /// when none is left, the caller waiting).
    public let refillThreshold: Int
    /// Background batches in flight, by challenge digest and key id.
    private var refills: [[UInt8]: Task<Void, Never>] = [:]
    /// Whether the issuer has shown it takes one token request per POST.
    public private(set) var issuerTakesOneRequestPerPost = false

    public init(
        issuerURL: URL, credential: String, transport: any PrivacyPassIssuerTransport, store: any PrivateTokenCache, batchSize: Int = 16, refillThreshold: Int = 0
    ) {
        self.refillThreshold = max(0, min(refillThreshold, batchSize))
        self.issuerURL = issuerURL
        self.credential = credential
        self.transport = transport
        self.store = store
        self.batchSize = max(1, min(batchSize, 64))
    }

    /// The issuer's directory, cached for five minutes.
    public func issuerDirectory(refresh: Bool = false) async throws(Failure) -> IssuerDirectory {
        if !refresh, let directory, Date().timeIntervalSince(directory.fetched) < 300 { return directory.value }
        let url = issuerURL.appendingPathComponent(String(IssuerDirectory.wellKnownPath.dropFirst()))
        let answer = try await transport.exchange(method: "GET", url: url, headers: [("Accept", IssuerDirectory.mediaType)], body: [])
        guard answer.status == 200 else { throw .server(status: answer.status, message: "issuer directory: \(answer.message)") }
        do throws(PrivacyPassError) {
            let value = try IssuerDirectory(decoding: answer.body)
            directory = (value, Date())
            return value
        } catch { throw .protocolMismatch("\(error)") }
    }

    /// Apple's way, for an origin that sends no challenge (Apple's PIR service answers 401 without
    /// `WWW-Authenticate`; its clients fetch tokens ahead of time): a challenge of the client's
    /// own making — token type 2, the configured issuer's name, no redemption context, no origin
    /// (RFC 9577 §2.1) — with the newest token key in service that the issuer publishes.
    public func ownChallenge() async throws(Failure) -> (challenge: TokenChallenge, tokenKeyDER: [UInt8]) {
        let directory = try await issuerDirectory()
        guard let key = directory.currentKey(now: UInt64(Date().timeIntervalSince1970)) else {
            throw .protocolMismatch("the issuer's directory lists no token key in service")
        }
        return (TokenChallenge(issuerName: issuerURL.host ?? "", originInfo: []), key)
    }

    /// A token for this challenge, from the store or from a new batch.
    public func token(for challenge: TokenChallenge, tokenKeyDER: [UInt8]) async throws(Failure) -> PrivateToken {
        guard challenge.issuerName.lowercased() == issuerURL.host?.lowercased() else {
            throw .protocolMismatch("the challenge names issuer '\(challenge.issuerName)', not the configured '\(issuerURL.host ?? "")'")
        }
        let keyID = PrivateToken.keyID(publicKeyDER: tokenKeyDER)
        let refill = challenge.digest + keyID
        if store.count(challengeDigest: challenge.digest, keyID: keyID) == 0, let inFlight = refills[refill] { await inFlight.value }
        if let stored = try store.take(challengeDigest: challenge.digest, keyID: keyID) {
            if refillThreshold > 0, refills[refill] == nil, store.count(challengeDigest: challenge.digest, keyID: keyID) < refillThreshold {
                refills[refill] = Task {
                    // A failure here is said by the caller that finds no token left.
                    if let batch = try? await self.fetchBatch(for: challenge, tokenKeyDER: tokenKeyDER) {
                        try? self.store.add(batch.tokens, keepKeyIDs: batch.keep)
                    }
                    self.refillEnded(refill)
                }
            }
            return stored
        }
        let batch = try await fetchBatch(for: challenge, tokenKeyDER: tokenKeyDER)
        try store.add(Array(batch.tokens.dropFirst()), keepKeyIDs: batch.keep)
        return batch.tokens[0]
    }

    private func refillEnded(_ key: [UInt8]) { refills[key] = nil }

    /// A batch (never empty) for this challenge after checking the key against the issuer's
    /// directory, and the ids of the keys the issuer still publishes.
    private func fetchBatch(for challenge: TokenChallenge, tokenKeyDER: [UInt8]) async throws(Failure) -> (tokens: [PrivateToken], keep: Set<[UInt8]>) {
        var published = try await issuerDirectory()
        if !published.tokenKeys.contains(where: { $0.publicKeyDER == tokenKeyDER }) { published = try await issuerDirectory(refresh: true) }
        guard published.tokenKeys.contains(where: { $0.publicKeyDER == tokenKeyDER }) else {
            throw .protocolMismatch("the origin's token key is not one the issuer publishes; refusing to use it")
        }
        let fresh = try await issue(count: batchSize, challenge: challenge, tokenKeyDER: tokenKeyDER, directory: published)
        let keep = Set(published.tokenKeys.compactMap(\.publicKeyDER).map { PrivateToken.keyID(publicKeyDER: $0) })
        return (fresh, keep)
    }

    /// `count` tokens: one round trip, or (for an issuer that takes one request per POST)
    /// `count` single round trips at once.
    func issue(count: Int, challenge: TokenChallenge, tokenKeyDER: [UInt8], directory: IssuerDirectory) async throws(Failure) -> [PrivateToken] {
        if !issuerTakesOneRequestPerPost {
            do { return try await post(count: count, challenge: challenge, tokenKeyDER: tokenKeyDER, directory: directory) } catch {
                guard count > 1, case .server(413, _) = error else { throw error }
                issuerTakesOneRequestPerPost = true
            }
        }
        let results = await withTaskGroup(of: Result<[PrivateToken], Failure>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do throws(Failure) { return .success(try await self.post(count: 1, challenge: challenge, tokenKeyDER: tokenKeyDER, directory: directory)) } catch {
                        return .failure(error)
                    }
                }
            }
            var results: [Result<[PrivateToken], Failure>] = []
            for await result in group { results.append(result) }
            return results
        }
        let tokens = results.flatMap { (try? $0.get()) ?? [] }
        guard !tokens.isEmpty else {
            for case .failure(let error) in results { throw error }
            throw .protocolMismatch("no token issued")
        }
        return tokens
    }

    /// One issuance round trip for `count` tokens.
    func post(count: Int, challenge: TokenChallenge, tokenKeyDER: [UInt8], directory: IssuerDirectory) async throws(Failure) -> [PrivateToken] {
        var body: [UInt8] = []
        var pending: [BlindRSAIssuance.PendingToken] = []
        for _ in 0..<count {
            do throws(PrivacyPassError) {
                let (request, state) = try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: tokenKeyDER)
                body += request.encoded()
                pending.append(state)
            } catch { throw .protocolMismatch("token request: \(error)") }
        }
        guard let url = URL(string: directory.issuerRequestURI, relativeTo: issuerURL)?.absoluteURL else {
            throw .protocolMismatch("issuer-request-uri '\(directory.issuerRequestURI)' is not a URL")
        }
        let answer = try await transport.exchange(
            method: "POST", url: url,
            headers: [("Content-Type", "application/private-token-request"), ("Authorization", "Bearer \(credential)")], body: body)
        guard answer.status == 200 else { throw .server(status: answer.status, message: "issuer: \(answer.message)") }
        guard answer.body.count == count * PrivateToken.authenticatorLength else {
            throw .protocolMismatch("issuer answered \(answer.body.count) bytes for \(count) token requests")
        }
        var tokens: [PrivateToken] = []
        for (index, state) in pending.enumerated() {
            let signature = Array(answer.body[(index * PrivateToken.authenticatorLength)..<((index + 1) * PrivateToken.authenticatorLength)])
            do throws(PrivacyPassError) { tokens.append(try BlindRSAIssuance.finalize(state, response: signature)) } catch {
                throw .protocolMismatch("token \(index): \(error)")
            }
        }
        fetchedTokens += tokens.count
        return tokens
    }
}
