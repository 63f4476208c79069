import NetExtCore
import NetExtDaemon
import NetExtTesting
import Testing

@Suite("Network worker")
struct NetworkWorkerTests {
    @Test("steps reach the applier in the order they were asked for, queued or awaited; failures come back")
    func ordered() async throws {
        let applier = RecordingNetworkApplier(failingStep: "nosuchword")
        let worker = NetworkWorker(applier: applier)
        let plans = try (0..<20).map { try RecordingNetworkApplierTests.plan("netext\($0)") }
        for plan in plans {
            worker.enqueue { $0.teardown(plan) }
            try await worker.performThrowing { applier throws(NetExtError) in try applier.apply(plan) }
        }
        await worker.drain()
        #expect(applier.events == plans.flatMap { [.tornDown($0), .applied($0)] })
        #expect(applier.activePlans == plans)

        applier.failApplies(containing: "route")
        await #expect(throws: NetExtError.self) {
            try await worker.performThrowing { applier throws(NetExtError) in try applier.apply(plans[0]) }
        }
        #expect(await worker.perform { $0.underlyingMTU(toward: "192.0.2.1") } == 1500)
    }
}
