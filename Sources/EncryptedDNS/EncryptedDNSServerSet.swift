import Foundation
import Synchronization

/// The encrypted servers of one DNS settings configuration, asked in order: a server that
/// failed lately (in the last ``penaltySeconds``) is asked after those that did not, so a dead
/// first server costs one timeout per penalty period, not one per query. Every server is still
/// asked before a query fails.
public final class EncryptedDNSServerSet: Sendable {
    public let upstreams: [any EncryptedDNSUpstream]
    /// How long a failed server waits behind the others.
    public static let penaltySeconds: Double = 30
    private let failedAt: Mutex<[Double?]>
    private let now: @Sendable () -> Double

    public init(_ upstreams: [any EncryptedDNSUpstream], now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.upstreams = upstreams
        self.now = now
        failedAt = Mutex([Double?](repeating: nil, count: upstreams.count))
    }

    /// The order servers are asked in now: those without a recent failure first, each group in
    /// the configuration's order.
    public func order() -> [Int] {
        let time = now()
        let failures = failedAt.withLock { $0 }
        let recent = { (index: Int) -> Bool in failures[index].map { time - $0 < Self.penaltySeconds } ?? false }
        let indices = Array(upstreams.indices)
        return indices.filter { !recent($0) } + indices.filter(recent)
    }

    /// The answer of the first server that gives one (blocking; never call on an event loop),
    /// or every server's reason.
    public func resolve(_ query: [UInt8], timeoutMilliseconds: Int) -> Result<[UInt8], Failures> {
        var errors: [EncryptedDNSError] = []
        for index in order() {
            do throws(EncryptedDNSError) {
                let answer = try upstreams[index].resolve(query, timeoutMilliseconds: timeoutMilliseconds)
                failedAt.withLock { $0[index] = nil }
                return .success(answer)
            } catch {
                if case .malformedQuery = error { return .failure(Failures(errors: [error])) }
                failedAt.withLock { $0[index] = now() }
                errors.append(error)
            }
        }
        return .failure(Failures(errors: errors))
    }

    /// Each server's reason, in the order they were asked.
    public struct Failures: Error, Sendable, CustomStringConvertible {
        public var errors: [EncryptedDNSError]
        public var description: String { errors.map(\.description).joined(separator: "; ") }
    }

    /// Closes every server's connection.
    public func shutdown() {
        upstreams.forEach { $0.shutdown() }
    }
}
