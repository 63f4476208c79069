import Foundation
import Synchronization

/// What a session's delegate said of a server (its `.serverTrust` challenge).
enum ServerTrustVerdict: Sendable, Equatable {
    /// Default evaluation decides (`.performDefaultHandling`, `.rejectProtectionSpace`).
    case defaultHandling
    /// `.useCredential` with `URLCredential(trust:)`: the server with these certificates.
    case accept(ServerTrust)
    /// `.cancelAuthenticationChallenge`: the load fails with ``HTTPLoadError/cancelled``.
    case cancel
}

/// The connection pool's way to its session's delegate, set once the session exists (the pool
/// is made first); without one, default evaluation alone decides.
final class ServerTrustJudge: Sendable {
    typealias Judging = @Sendable (ServerTrust, HTTPOrigin) async -> ServerTrustVerdict
    private let judging = Mutex<Judging?>(nil)

    func set(_ body: @escaping Judging) { judging.withLock { $0 = body } }

    /// The session was invalidated: default evaluation alone decides from now on, and what the
    /// judging closure held (the session, its delegate) is let go.
    func clear() { judging.withLock { $0 = nil } }

    var isSet: Bool { judging.withLock { $0 != nil } }

    /// Whether the delegate refuses a server default evaluation trusted (its own pinning), shown
    /// its leaf certificate; false without a delegate.
    func refuses(trustedLeaf leaf: [UInt8], for origin: HTTPOrigin) async -> Bool {
        guard isSet else { return false }
        return await verdict(on: ServerTrust(host: origin.host, certificates: [Data(leaf)], evaluationFailure: nil), for: origin) == .cancel
    }

    func verdict(on trust: ServerTrust, for origin: HTTPOrigin) async -> ServerTrustVerdict {
        guard let judge = judging.withLock({ $0 }) else { return .defaultHandling }
        return await judge(trust, origin)
    }
}
