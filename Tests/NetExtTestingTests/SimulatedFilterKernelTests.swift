import NetExtCore
import NetExtDaemon
import NetExtLinux
import NetExtTesting
import Testing

/// The simulated kernel on its own: what passes without steering, the queue's bypass when no
/// reader is bound, a verdict that never comes, and a re-injected packet meeting the rules again.
@Suite("Simulated filter kernel")
struct SimulatedFilterKernelTests {
    static let laptop: [UInt8] = [198, 51, 100, 2]
    static let server: [UInt8] = [203, 0, 113, 2]
    static let echo = EchoPacket.request(from: laptop, to: server, identifier: 7, sequence: 1)

    @Test("without steering every packet passes")
    func noSteering() async {
        let kernel = SimulatedFilterKernel()
        #expect(await kernel.send(Self.echo, outbound: true) == .passed)
    }

    @Test("with no reader bound, a fail-open filter lets queued packets pass and a fail-closed one drops them")
    func bypass() async throws {
        for failOpen in [true, false] {
            let kernel = SimulatedFilterKernel()
            try kernel.installSteering(FilterSteering(queueNumber: 1, failOpen: failOpen))
            let fate = await kernel.send(Self.echo, outbound: true)
            #expect(fate == (failOpen ? .passed : .dropped))
        }
    }

    @Test("a queued packet waits for its verdict: allow marks the flow (later packets pass without the queue), a verdict that never comes drops it")
    func verdicts() async throws {
        let kernel = SimulatedFilterKernel()
        try kernel.installSteering(FilterSteering(queueNumber: 1, failOpen: false))
        let queue = try kernel.openQueue(number: 1, failOpen: false)
        // The "engine": allow the first packet it reads by re-injecting it with the allow mark.
        let reader = Task.detached {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
            defer { buffer.deallocate() }
            var ids: [UInt32] = []
            for _ in 0..<100 where ids.isEmpty {
                _ = try? queue.receive(into: buffer, timeoutMilliseconds: 50) { ids.append($0.id) }
            }
            for id in ids { try? queue.setVerdict(.repeatWithMark(FilterSteering.allowMark), for: id) }
            return ids.count
        }
        #expect(await kernel.send(Self.echo, outbound: true) == .passed)
        #expect(await reader.value == 1)
        // The flow's conntrack mark now lets its packets through without a verdict.
        #expect(await kernel.send(Self.echo, outbound: true, timeout: .milliseconds(10)) == .passed)
        // A new flow (another identifier) is queued, and nobody answers it.
        let other = EchoPacket.request(from: Self.laptop, to: Self.server, identifier: 8, sequence: 1)
        #expect(await kernel.send(other, outbound: true, timeout: .milliseconds(50)) == .dropped)
        queue.close()
    }
}
