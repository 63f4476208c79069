import Foundation
import NIOCore
import Synchronization

/// The encrypted servers of one DNS settings configuration, asked in order: a server that
/// failed lately (in the last ``penaltySeconds``) is asked after those that did not, so a dead
/// first server costs one timeout per penalty period, not one per query. Every server is still
/// asked before a query fails. In parallel mode every server is asked at once and the first
/// answer wins: a query costs the fastest server's time, and a dead server none.
///
/// A server may have several connections, each on an event loop of its own, taken in turn: one
/// connection's TLS (and HTTP/2) work runs on one thread, which capped a cache-cold resolver at
/// a third of what the server answers.
public final class EncryptedDNSServerSet: Sendable {
    /// Each server's first connection (what status shows).
    public let upstreams: [any EncryptedDNSUpstream]
    /// Each server's connections.
    private let connections: [[any EncryptedDNSUpstream]]
    private let turn = Atomic<Int>(0)
    /// How long a failed server waits behind the others.
    public static let penaltySeconds: Double = 30
    private let failedAt: Mutex<[Double?]>
    /// How many servers `failedAt` holds a time for: while none, an answer takes no lock.
    private let failedCount = Atomic<Int>(0)
    private let now: @Sendable () -> Double
    /// Every server at once, the first answer taken.
    public let isParallel: Bool

    /// One connection a server.
    public convenience init(_ upstreams: [any EncryptedDNSUpstream], parallel: Bool = false, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.init(servers: upstreams.map { [$0] }, parallel: parallel, now: now)
    }

    /// Each server with its connections (at least one each).
    public init(servers: [[any EncryptedDNSUpstream]], parallel: Bool = false, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        isParallel = parallel
        connections = servers.filter { !$0.isEmpty }
        upstreams = connections.map { $0[0] }
        self.now = now
        failedAt = Mutex([Double?](repeating: nil, count: upstreams.count))
    }

    /// The order servers are asked in now: those without a recent failure first, each group in
    /// the configuration's order.
    public func order() -> [Int] {
        // No server failed lately (the usual case): the configuration's order, without the lock.
        guard failedCount.load(ordering: .relaxed) > 0 else { return Array(upstreams.indices) }
        let time = now()
        let failures = failedAt.withLock { $0 }
        let recent = { (index: Int) -> Bool in failures[index].map { time - $0 < Self.penaltySeconds } ?? false }
        let indices = Array(upstreams.indices)
        return indices.filter { !recent($0) } + indices.filter(recent)
    }

    /// The answer of the first server that gives one, or every server's reason
    /// (``Failures``): servers are asked one after another, in ``order()``.
    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int) -> EventLoopFuture<[UInt8]> {
        let promise = upstreams[0].eventLoop.makePromise(of: [UInt8].self)
        exchange(query, timeoutMilliseconds: timeoutMilliseconds) { promise.completeWith($0.mapError { $0 as any Error }) }
        return promise.futureResult
    }

    /// Parallel mode: every server asked at once; the first answer completes the query, and
    /// only when all have failed does it fail, with each server's reason in ``order()``.
    private func askAll(_ query: [UInt8], timeoutMilliseconds: Int, completion: @escaping @Sendable (Result<[UInt8], Failures>) -> Void) {
        let indices = order()
        let outcome = Mutex<(done: Bool, errors: [Int: EncryptedDNSError])>((false, [:]))
        for index in indices {
            ask([index][...], query, timeoutMilliseconds: timeoutMilliseconds, errors: []) { result in
                switch result {
                case .success(let answer):
                    let first = outcome.withLock { state -> Bool in
                        defer { state.done = true }
                        return !state.done
                    }
                    if first { completion(.success(answer)) }
                case .failure(let failures):
                    let failure = failures.errors.first ?? .connectFailed(server: self.upstreams[index].serverDescription, reason: "\(failures)")
                    let all = outcome.withLock { state -> [EncryptedDNSError]? in
                        state.errors[index] = failure
                        guard !state.done, state.errors.count == indices.count else { return nil }
                        state.done = true
                        return indices.compactMap { state.errors[$0] }
                    }
                    if let all { completion(.failure(Failures(errors: all))) }
                }
            }
        }
    }

    /// ``exchange(_:timeoutMilliseconds:)`` waited for on the calling thread (never an event loop's).
    public func resolve(_ query: [UInt8], timeoutMilliseconds: Int) -> Result<[UInt8], Failures> {
        do {
            return .success(try exchange(query, timeoutMilliseconds: timeoutMilliseconds).wait())
        } catch let failures as Failures {
            return .failure(failures)
        } catch {
            return .failure(Failures(errors: [.connectFailed(server: "?", reason: "\(error)")]))
        }
    }

    /// ``exchange(_:timeoutMilliseconds:)`` with a callback (no future a query): `completion` is
    /// called once, on the event loop of the connection that answered or failed last.
    public func exchange(_ query: [UInt8], timeoutMilliseconds: Int, completion: @escaping @Sendable (Result<[UInt8], Failures>) -> Void) {
        guard isParallel, upstreams.count > 1 else {
            return ask(order()[...], query, timeoutMilliseconds: timeoutMilliseconds, errors: [], completion: completion)
        }
        askAll(query, timeoutMilliseconds: timeoutMilliseconds, completion: completion)
    }

    private func ask(
        _ remaining: ArraySlice<Int>, _ query: [UInt8], timeoutMilliseconds: Int, errors: [EncryptedDNSError],
        completion: @escaping @Sendable (Result<[UInt8], Failures>) -> Void
    ) {
        let index = remaining.first!
        lane(of: connections[index]).exchange(query, timeoutMilliseconds: timeoutMilliseconds) { [self] result in
            switch result {
            case .success(let answer):
                if failedCount.load(ordering: .relaxed) > 0 { markFailed(index, at: nil) }
                completion(.success(answer))
            case .failure(let failure):
                if case .malformedQuery = failure { return completion(.failure(Failures(errors: [failure]))) }
                markFailed(index, at: now())
                let next = remaining.dropFirst()
                guard !next.isEmpty else { return completion(.failure(Failures(errors: errors + [failure]))) }
                ask(next, query, timeoutMilliseconds: timeoutMilliseconds, errors: errors + [failure], completion: completion)
            }
        }
    }

    /// Records that server `index` failed at `time` (nil: it answered).
    private func markFailed(_ index: Int, at time: Double?) {
        failedAt.withLock { failedAt in
            if (failedAt[index] == nil) != (time == nil) { failedCount.wrappingAdd(time == nil ? -1 : 1, ordering: .relaxed) }
            failedAt[index] = time
        }
    }

    /// The connection on the calling thread's event loop (a query read there stays on its
    /// thread), else the next in turn.
    private func lane(of lanes: [any EncryptedDNSUpstream]) -> any EncryptedDNSUpstream {
        guard lanes.count > 1 else { return lanes[0] }
        for lane in lanes where lane.eventLoop.inEventLoop { return lane }
        return lanes[(turn.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max) % lanes.count]
    }

    /// Each server's reason, in the order they were asked.
    public struct Failures: Error, Sendable, CustomStringConvertible {
        public var errors: [EncryptedDNSError]
        public var description: String { errors.map(\.description).joined(separator: "; ") }
    }

    /// Closes every server's connection.
    public func shutdown() {
        connections.joined().forEach { $0.shutdown() }
    }
}
