import Foundation
import PrivacyPass
import Synchronization

/// Answers Privacy Pass challenges (RFC 9577): when a service replies 401 with
/// `WWW-Authenticate: PrivateToken …`, a token for that challenge is attached and the request
/// sent once more. The challenge is remembered per origin, so later requests carry a token
/// from the start and cost no extra round trip. A 401 without a PrivateToken challenge (Apple's
/// PIR service answers so: its clients fetch tokens ahead of time) is answered Apple's way: with
/// a token for a challenge of the client's own making (`PrivacyPassClient.ownChallenge`),
/// remembered for that origin in the same way.
public final class TokenAuthenticatingTransport: ServiceTransport {
    let inner: any ServiceTransport
    let tokens: PrivacyPassClient
    private let challenges = Mutex([String: (challenge: TokenChallenge, key: [UInt8])]())

    public init(inner: any ServiceTransport, tokens: PrivacyPassClient) {
        self.inner = inner
        self.tokens = tokens
    }

    public func send(_ request: ServiceRequest) async throws(URLFilterError) -> ServiceResponse {
        let origin = "\(request.url.host ?? ""):\(request.url.port ?? 0)"
        var attempt = request
        if let known = challenges.withLock({ $0[origin] }) {
            attempt.headers.append(("Authorization", PrivateTokenHeader.authorization(try await token(for: known.challenge, key: known.key))))
        }
        let first = try await inner.send(attempt)
        guard first.status == 401 else { return first }
        let offered: [(challenge: TokenChallenge, tokenKeyDER: [UInt8])]
        do throws(PrivacyPassError) { offered = try PrivateTokenHeader.parseChallenges(first.header("WWW-Authenticate") ?? "") } catch {
            throw .protocolMismatch("\(error)")
        }
        let chosen: (challenge: TokenChallenge, tokenKeyDER: [UInt8])
        if !offered.isEmpty {
            guard let blindRSA = offered.first(where: { $0.challenge.tokenType == PrivateToken.blindRSAType }) else { return first }
            chosen = blindRSA
        } else {
            // Refused without a challenge. A token of our own making was already refused: stop.
            if let known = challenges.withLock({ $0[origin] }), known.challenge.originInfo.isEmpty { return first }
            do throws(PrivacyPassClient.Failure) { chosen = try await tokens.ownChallenge() } catch { throw URLFilterError(error) }
        }
        challenges.withLock { $0[origin] = (chosen.challenge, chosen.tokenKeyDER) }
        var retry = request
        retry.headers.append(("Authorization", PrivateTokenHeader.authorization(try await token(for: chosen.challenge, key: chosen.tokenKeyDER))))
        return try await inner.send(retry)
    }

    private func token(for challenge: TokenChallenge, key: [UInt8]) async throws(URLFilterError) -> PrivateToken {
        do throws(PrivacyPassClient.Failure) { return try await tokens.token(for: challenge, tokenKeyDER: key) } catch { throw URLFilterError(error) }
    }
}
