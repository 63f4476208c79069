import NIOCore
import Synchronization

/// Keeps a relay connection's Privacy Pass token to one use. The relay redeems a `PrivateToken`
/// credential (RFC 9577) once and admits the whole connection (``RelayConnectionAdmission``); the
/// same token on a second request sent before the first was answered is redeemed again and
/// refused as spent (407). So on a connection whose fields carry one, the first request presents
/// it and the requests opened meanwhile wait for its answer: once the relay answered anything
/// but 407 the connection is admitted and they go without the token; a 407 refuses them with the
/// first one's failure; a request that ended unanswered leaves the next one to present it.
/// Bearer credentials are checked on every request and pass untouched.
final class RelayAdmissionGate: Sendable {
    /// What one request does with the token.
    enum Turn: Equatable {
        /// No single-use credential on this connection: every field goes.
        case unneeded
        /// This request presents the token and settles the gate with its answer.
        case presenting
        /// The connection is admitted: the token stays out.
        case admitted
    }

    private enum State {
        case open
        case pending([CheckedContinuation<Turn, any Error>])
        case admitted
        case refused(any Error)
    }

    let isNeeded: Bool
    private let state = Mutex(State.open)

    /// `fields`: every request's header fields; the gate is needed when one is a
    /// `PrivateToken` credential, or when tokens come from a source (`fetchesTokens`).
    init(fields: [(name: String, value: String)], fetchesTokens: Bool = false) {
        isNeeded = fetchesTokens || fields.contains(where: Self.isSingleUseCredential)
    }

    /// Whether `field` is a Privacy Pass credential (`Proxy-Authorization` or `Authorization`
    /// with the `PrivateToken` scheme, RFC 9577 §2.2).
    static func isSingleUseCredential(_ field: (name: String, value: String)) -> Bool {
        let name = field.name.lowercased()
        guard name == "proxy-authorization" || name == "authorization" else { return false }
        return field.value.drop { $0 == " " }.lowercased().hasPrefix("privatetoken ")
    }

    /// The fields a request with `turn` sends.
    static func fields(_ fields: [(name: String, value: String)], for turn: Turn) -> [(name: String, value: String)] {
        turn == .admitted ? fields.filter { !isSingleUseCredential($0) } : fields
    }

    /// This request's turn; waits while another presents the token. Throws the first request's
    /// failure when the relay refused the token.
    func begin() async throws -> Turn {
        guard isNeeded else { return .unneeded }
        return try await withCheckedThrowingContinuation { continuation in
            let now: Result<Turn, any Error>? = state.withLock { state in
                switch state {
                case .open:
                    state = .pending([])
                    return .success(.presenting)
                case .pending(var waiting):
                    waiting.append(continuation)
                    state = .pending(waiting)
                    return nil
                case .admitted:
                    return .success(.admitted)
                case .refused(let error):
                    return .failure(error)
                }
            }
            if let now { continuation.resume(with: now) }
        }
    }

    /// Settles the gate with the presenting request's outcome: admitted by any answer but 407,
    /// refused by a 407, open again when it ended without an answer. Other turns change nothing.
    func settle(_ turn: Turn, with outcome: Result<Void, any Error>) {
        guard turn == .presenting else { return }
        let next: State
        switch outcome {
        case .success:
            next = .admitted
        case .failure(let error as RelayClient.Failure) where error.status == 407:
            next = .refused(error)
        case .failure(let error as RelayClient.Failure) where error.status != nil:
            next = .admitted
        case .failure:
            next = .open
        }
        let (waiting, presenter): ([CheckedContinuation<Turn, any Error>], CheckedContinuation<Turn, any Error>?) = state.withLock { state in
            guard case .pending(var waiting) = state else { return ([], nil) }
            switch next {
            case .open where !waiting.isEmpty:
                // The next one presents the token; the rest keep waiting for its answer.
                let first = waiting.removeFirst()
                state = .pending(waiting)
                return ([], first)
            default:
                state = next
                return (waiting, nil)
            }
        }
        presenter?.resume(returning: .presenting)
        for continuation in waiting {
            switch next {
            case .admitted: continuation.resume(returning: .admitted)
            case .refused(let error): continuation.resume(throwing: error)
            case .open, .pending: continuation.resume(returning: .presenting)
            }
        }
    }
}
