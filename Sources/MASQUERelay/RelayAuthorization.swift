import HTTPFetching
import HTTPServing
import NIOCore

/// Who may open a stream on one relay connection (RFC 9110 §11.7: proxy authentication). A
/// bearer token (`Proxy-Authorization: Bearer …`) is checked on every request; a Privacy Pass
/// token (`Proxy-Authorization: PrivateToken token=…`, RFC 9577) is redeemed once and admits the
/// whole connection, so a client spends one token a connection — not one a flow — and the relay
/// can link the flows of one connection but not two connections of one user.
final class RelayConnectionAdmission: @unchecked Sendable {
    /// Set on the connection's event loop (its streams share it) once a Privacy Pass token was
    /// redeemed on one of its streams; from the start when the client's certificate admitted it.
    var admitted: Bool

    init(admitted: Bool = false) {
        self.admitted = admitted
    }
}

/// What the relay does with a request's credential.
enum RelayAuthorization {
    case admitted
    /// Ask the Privacy Pass verifier (it redeems the token, or answers with a challenge).
    case redeem(any HTTPRequestAuthorizer, credential: String?)
    case refused(reason: String, challenges: [String])

    /// The decision for `credential` (`proxy-authorization`, else `authorization`) on a
    /// connection whose `admission` may already hold.
    static func decide(_ credential: String?, policy: RelayPolicy, admission: RelayConnectionAdmission) -> RelayAuthorization {
        if admission.admitted || policy.admits(authorization: credential) { return .admitted }
        if let verifier = policy.privateTokens, credential.map({ !isBearer($0) }) ?? true { return .redeem(verifier, credential: credential) }
        return .refused(reason: "no valid bearer credential", challenges: bearerChallenge(policy))
    }

    /// Redeems `credential` with `verifier`: nil when the token was good; otherwise the status
    /// (407 for a refused or missing token, with the verifier's `PrivateToken` challenge as
    /// `Proxy-Authenticate`; 503 when the issuer's keys are unavailable) and the challenges.
    static func redeem(
        _ credential: String?, with verifier: any HTTPRequestAuthorizer, policy: RelayPolicy
    ) async -> (status: Int, reason: String, challenges: [String])? {
        let request = HTTPServerRequest(method: "CONNECT", path: "/", headers: credential.map { [("Authorization", $0)] } ?? [])
        return answer(await verifier.authorize(request), policy: policy)
    }

    /// Redeems `credential` off the event loop, then, on `eventLoop`, counts the outcome, marks
    /// `admission` when the token was good, and calls `done` with the refusal to answer (nil:
    /// admitted). The HTTP/2 streams and the HTTP/1.1 CONNECT handler both go through here.
    static func redeem(
        _ credential: String?, with verifier: any HTTPRequestAuthorizer, policy: RelayPolicy, admission: RelayConnectionAdmission, counters: RelayCounters,
        on eventLoop: any EventLoop, done: @escaping @Sendable ((status: Int, reason: String, challenges: [String])?) -> Void
    ) {
        Task {
            let refusal = await redeem(credential, with: verifier, policy: policy)
            eventLoop.execute {
                if let refusal {
                    counters.count(refusal.status == 407 ? \.unauthorized : \.failed)
                } else {
                    admission.admitted = true
                    counters.count(\.privateTokensRedeemed)
                }
                done(refusal)
            }
        }
    }

    static func answer(_ refusal: HTTPServerResponse?, policy: RelayPolicy) -> (status: Int, reason: String, challenges: [String])? {
        guard let refusal else { return nil }
        let reason = String(decoding: refusal.body, as: UTF8.self).trimmingCharacters(in: .newlines)
        guard refusal.status == 401 || refusal.status == 403 else { return (refusal.status, reason, []) }
        return (407, reason, bearerChallenge(policy) + (refusal.header("WWW-Authenticate").map { [$0] } ?? []))
    }

    private static func bearerChallenge(_ policy: RelayPolicy) -> [String] {
        policy.bearerTokens.isEmpty ? [] : ["Bearer"]
    }

    private static func isBearer(_ credential: String) -> Bool {
        credential.utf8.count > 7 && credential.prefix(7).lowercased() == "bearer "
    }
}
