import Foundation
import HTTPFetching
import PrivacyPass
import Synchronization

/// Privacy Pass tokens for relays (RFC 9577 type 0x0002, blind RSA): when a relay answers 407
/// with `Proxy-Authenticate: PrivateToken challenge=…, token-key=…`, a token for that challenge
/// comes from the configured issuer (RFC 9578 §5: a batch at a time, the long-term credential as
/// `Authorization: Bearer`, the relay's key checked against the issuer's directory first, so a
/// relay cannot single a client out with a key of its own, RFC 9576 §6.2), and the challenge is
/// remembered per relay, so each later connection presents a fresh token from its first
/// request. Challenges of other issuers or token types are not answered. Unused tokens are kept
/// in memory (``InMemoryTokenCache``); when a quarter of a batch is left, the next one is fetched
/// in the background, so a new connection seldom waits for the issuer.
public final class PrivacyPassRelayTokens: RelayTokenSource {
    let client: PrivacyPassClient
    private let known = Mutex([String: (challenge: TokenChallenge, key: [UInt8])]())

    /// - Parameters:
    ///   - issuerURL: the issuer's origin (`https://issuer.example`): its directory at
    ///     `/.well-known/private-token-issuer-directory`, the name challenges must carry its host.
    ///   - credential: what the issuer takes as `Authorization: Bearer` (its attester's).
    ///   - tls: whom an https issuer must prove itself to (nil: the system's trust store).
    public init(issuerURL: URL, credential: String, tls: ClientTLS? = nil, batchSize: Int = 8, timeout: Double = 15) {
        client = PrivacyPassClient(
            issuerURL: issuerURL, credential: credential, transport: DirectIssuerTransport(upstream: HTTPUpstream(timeout: timeout, tls: tls)),
            store: InMemoryTokenCache(), batchSize: batchSize, refillThreshold: max(1, batchSize / 4))
    }

    /// Tokens obtained from the issuer so far.
    public var fetchedTokens: Int { get async { await client.fetchedTokens } }

    public func credential(answering challenges: [String], relay: String) async throws -> String? {
        var offered: [(challenge: TokenChallenge, tokenKeyDER: [UInt8])] = []
        for value in challenges {
            // A field may hold other schemes (Bearer) beside PrivateToken; one that does not
            // parse is skipped rather than failing the others.
            offered += (try? PrivateTokenHeader.parseChallenges(value)) ?? []
        }
        let issuerName = client.issuerURL.host?.lowercased()
        guard let chosen = offered.first(where: { $0.challenge.tokenType == PrivateToken.blindRSAType && $0.challenge.issuerName.lowercased() == issuerName }) else {
            return nil
        }
        known.withLock { $0[relay] = (chosen.challenge, chosen.tokenKeyDER) }
        return try await credential(for: chosen.challenge, key: chosen.tokenKeyDER)
    }

    public func credential(forKnownChallengeOf relay: String) async throws -> String? {
        guard let chosen = known.withLock({ $0[relay] }) else { return nil }
        return try await credential(for: chosen.challenge, key: chosen.key)
    }

    private func credential(for challenge: TokenChallenge, key: [UInt8]) async throws(PrivacyPassClient.Failure) -> String {
        PrivateTokenHeader.authorization(try await client.token(for: challenge, tokenKeyDER: key))
    }
}

/// The issuer reached straight over HTTP(S) (`HTTPUpstream`: pooled connections).
struct DirectIssuerTransport: PrivacyPassIssuerTransport {
    let upstream: HTTPUpstream

    func exchange(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async throws(PrivacyPassClient.Failure) -> PrivacyPassIssuerAnswer {
        do throws(HTTPUpstream.Failure) {
            let answer = try await upstream.exchange(method: method, url: url, headers: headers, body: body)
            return PrivacyPassIssuerAnswer(status: answer.status, body: answer.body)
        } catch {
            if case .timedOut = error { throw .transport("\(url.host ?? url.absoluteString): \(error)") }
            throw .transport("\(error)")
        }
    }
}
