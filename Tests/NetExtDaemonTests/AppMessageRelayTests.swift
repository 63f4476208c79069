import Foundation
import NetExtCore
import Testing
@testable import NetExtDaemon

/// The relay behind `sendProviderMessage`: every message ends exactly once, and a provider can
/// answer only its own configuration's messages.
@Suite("App message relay")
struct AppMessageRelayTests {
    /// Owns a relay as the session manager does, and lets the test send and answer.
    actor Owner {
        var relay = AppMessageRelay()
        var ids: [Int] = []

        func send(to configuration: UUID) async -> Result<Data?, NetExtError> {
            await withCheckedContinuation { waiter in ids.append(relay.register(to: configuration, waiter: waiter)) }
        }

        func reply(_ id: Int, from configuration: UUID, data: Data?) -> Bool { relay.reply(id, from: configuration, data: data) }
        func finish(_ id: Int, _ result: Result<Data?, NetExtError>) { relay.finish(id, result) }
        func failAll(of configuration: UUID, _ error: NetExtError) { relay.failAll(of: configuration, error) }
        var waitingCount: Int { relay.waitingCount }

        /// Waits (at most 2 s) until `count` messages wait for an answer.
        func waitUntilWaiting(_ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(2)
            while relay.waitingCount < count {
                guard ContinuousClock.now < deadline else { throw NetExtError(.timedOut, "only \(relay.waitingCount) of \(count) messages registered") }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    @Test("a reply reaches its sender; another configuration's provider cannot answer it")
    func replyFromItsOwnProvider() async throws {
        let owner = Owner()
        let (office, home) = (UUID(), UUID())
        async let answer = owner.send(to: office)
        try await owner.waitUntilWaiting(1)
        let id = try #require(await owner.ids.first)
        #expect(await owner.reply(id, from: home, data: Data("forged".utf8)) == false)
        #expect(await owner.reply(id, from: office, data: Data("pong".utf8)))
        let result = try await answer.get()
        #expect(result == Data("pong".utf8))
        #expect(await owner.reply(id, from: office, data: nil) == false, "answered once")
        #expect(await owner.waitingCount == 0)
    }

    @Test("a provider's exit fails only its own configuration's messages; the deadline ends the rest, once")
    func exitAndDeadline() async throws {
        let owner = Owner()
        let (office, home) = (UUID(), UUID())
        async let first = owner.send(to: office)
        async let second = owner.send(to: office)
        async let third = owner.send(to: home)
        try await owner.waitUntilWaiting(3)
        await owner.failAll(of: office, NetExtError(.providerFailed, "the provider exited"))
        #expect(await owner.waitingCount == 1)
        let ids = await owner.ids
        for id in ids { await owner.finish(id, .failure(NetExtError(.timedOut, "deadline"))) }
        let results = await [first, second, third]
        #expect(results.map { (try? $0.get()) == nil } == [true, true, true])
        let codes = results.compactMap { result -> NetExtError.Code? in
            if case .failure(let error) = result { return error.code }
            return nil
        }
        #expect(codes == [.providerFailed, .providerFailed, .timedOut])
        #expect(await owner.waitingCount == 0)
    }
}
