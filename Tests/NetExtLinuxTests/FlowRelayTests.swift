import Foundation
import Glibc
import Synchronization
import NetExtTestSupport
import Testing
@testable import NetExtLinux

/// The flow relay (relay.c) on loopback TCP: an "app" connection and an "upstream" one, the
/// relay holding one end of each, the test the other ends. The bytes that come out must be the
/// bytes that went in, in order, whichever way the relay moved them (copied while short,
/// spliced once bulk, a rest the destination could not take parked in a pipe).
@Suite("Flow relay (an app proxy's TCP flows)", .serialized)
struct FlowRelayTests {
    /// Writes `chunks` in order (a pause after each where asked), then ends the sending side.
    static func writeAll(_ fd: Int32, _ chunks: [(bytes: [UInt8], pauseMicroseconds: UInt32)]) {
        for chunk in chunks {
            var offset = 0
            while offset < chunk.bytes.count {
                let written = chunk.bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
            if chunk.pauseMicroseconds > 0 { usleep(chunk.pauseMicroseconds) }
        }
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Everything until the peer's end (or a 10 s stall), reading `readSize` at a time with a
    /// pause between reads where asked.
    static func readAll(_ fd: Int32, readSize: Int = 65_536, pauseMicroseconds: UInt32 = 0) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: readSize)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return received }
            received += buffer[0..<count]
            if pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
        }
    }

    /// Runs each block on a thread of its own (they block on each other's sockets, so a pool
    /// with fewer threads than blocks could stall) and waits at most 60 s for all.
    static func together(_ blocks: [@Sendable () -> Void]) {
        let group = DispatchGroup()
        for block in blocks {
            group.enter()
            Thread { block(); group.leave() }.start()
        }
        _ = group.wait(timeout: .now() + 60)
    }

    /// Whether `received` is `sent`, said with both lengths and where they first differ (an
    /// `#expect` on the arrays themselves would diff megabytes on a failure).
    static func same(_ received: [UInt8], _ sent: [UInt8]) -> (Bool, Comment) {
        guard received != sent else { return (true, "") }
        let first = zip(received, sent).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(received.count, sent.count)
        return (false, "received \(received.count) bytes of \(sent.count); the first difference is at offset \(first)")
    }

    /// Relays one pair and waits (at most 30 s) for its outcome. The exchange and the wait
    /// block, so they run off the task pool: held there, they stalled every other suite's
    /// servers for two minutes on CI's two cores (an app proxy test's 20 s reads timed out).
    static func relay(app: Int32, upstream: Int32, while exchange: @escaping @Sendable () -> Void) async throws -> FlowRelay.Outcome? {
        try await offPool {
            let outcome = Mutex<FlowRelay.Outcome?>(nil)
            guard let relay = FlowRelay.shared else { throw SystemError("flow relay", errno: ENOMEM) }
            try relay.relay(app: app, upstream: upstream) { result in outcome.withLock { $0 = result } }
            exchange()
            for _ in 0..<3_000 where outcome.withLock({ $0 }) == nil { usleep(10_000) }
            return outcome.withLock { $0 }
        }
    }

    @Test("random writes both ways, short and bulk, with pauses: every byte arrives in order, and the outcome counts them", arguments: [UInt64(0x9E37_79B9_7F4A_7C15), 0xD1B5_4A32_D192_ED03, 0x2545_F491_4F6C_DD1D])
    func randomExchange(seed: UInt64) async throws {
        var random = SplitMix64(state: seed)
        let app = try LoopbackSockets.connectedPair(), upstream = try LoopbackSockets.connectedPair()
        defer { close(app.near); close(upstream.far) }
        // Sizes around the copy limit (16 KiB) and well past it, some of one byte.
        func chunks() -> [(bytes: [UInt8], pauseMicroseconds: UInt32)] {
            (0..<40).map { _ in
                let size = [1, 100, 16_383, 16_384, 16_385, 70_000, 300_000][random.below(7)]
                return (random.bytes(size), random.below(4) == 0 ? UInt32(random.below(3_000)) : 0)
            }
        }
        let toUpstream = chunks(), toApp = chunks()
        let receivedUpstream = Mutex<[UInt8]>([]), receivedApp = Mutex<[UInt8]>([])
        let outcome = try await Self.relay(app: app.far, upstream: upstream.near) {
            Self.together([
                { Self.writeAll(app.near, toUpstream) },
                { Self.writeAll(upstream.far, toApp) },
                { let bytes = Self.readAll(upstream.far, readSize: 7_000); receivedUpstream.withLock { $0 = bytes } },
                { let bytes = Self.readAll(app.near, pauseMicroseconds: 200); receivedApp.withLock { $0 = bytes } },
            ])
        }
        let sentUp = toUpstream.flatMap(\.bytes), sentDown = toApp.flatMap(\.bytes)
        let up = Self.same(receivedUpstream.withLock { $0 }, sentUp), down = Self.same(receivedApp.withLock { $0 }, sentDown)
        #expect(up.0, up.1)
        #expect(down.0, down.1)
        #expect(outcome?.error == nil)
        #expect(outcome?.appToUpstream == sentUp.count)
        #expect(outcome?.upstreamToApp == sentDown.count)
    }

    @Test("a destination that cannot take a whole short message now (small buffers, a reader that waits): the rest waits in the relay and arrives in order")
    func partialSends() async throws {
        var random = SplitMix64(state: 42)
        let app = try LoopbackSockets.connectedPair(), upstream = try LoopbackSockets.connectedPair()
        defer { close(app.near); close(upstream.far) }
        // The smallest send buffer the kernel allows on the relay's upstream socket, and a far
        // end that reads nothing for 300 ms: once its receive buffer is full, sends of the
        // relay's 10 KiB copies come back short.
        var small: Int32 = 4_096
        setsockopt(upstream.near, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let messages = (0..<60).map { _ in (bytes: random.bytes(10_000), pauseMicroseconds: UInt32(1_000)) }
        let received = Mutex<[UInt8]>([])
        let outcome = try await Self.relay(app: app.far, upstream: upstream.near) {
            Self.together([
                { Self.writeAll(app.near, messages) },
                {
                    usleep(300_000)
                    let bytes = Self.readAll(upstream.far, readSize: 3_000)
                    received.withLock { $0 = bytes }
                },
            ])
            shutdown(upstream.far, Int32(SHUT_WR))
            _ = Self.readAll(app.near)
        }
        let arrived = Self.same(received.withLock { $0 }, messages.flatMap(\.bytes))
        #expect(arrived.0, arrived.1)
        #expect(outcome?.error == nil)
        #expect(outcome?.appToUpstream == 600_000)
    }

    @Test("a bulk stream to an app that reads slowly (about 2 MB/s, as curl --limit-rate): the flow lasts as long as the reading, every byte arrives")
    func slowReader() async throws {
        var random = SplitMix64(state: 7)
        let app = try LoopbackSockets.connectedPair(), upstream = try LoopbackSockets.connectedPair()
        defer { close(app.near); close(upstream.far) }
        let stream = random.bytes(3_000_000)
        let received = Mutex<[UInt8]>([])
        let outcome = try await Self.relay(app: app.far, upstream: upstream.near) {
            Self.together([
                { Self.writeAll(upstream.far, [(stream, 0)]) },
                { let bytes = Self.readAll(app.near, readSize: 32_768, pauseMicroseconds: 15_000); received.withLock { $0 = bytes } },
            ])
            shutdown(app.near, Int32(SHUT_WR))
        }
        let arrived = Self.same(received.withLock { $0 }, stream)
        #expect(arrived.0, arrived.1)
        #expect(outcome?.error == nil)
        #expect(outcome?.upstreamToApp == stream.count)
    }

    @Test("many flows one after another: each carries only its own bytes (pipes used again hold nothing of an earlier flow), and descriptors do not pile up")
    func pipesUsedAgain() async throws {
        func openDescriptors() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
        // Warm the relay (its pool fills) before the count the rest is held to.
        for round in 0..<2 { try await exchangeOnce(round) }
        let before = openDescriptors()
        for round in 2..<120 { try await exchangeOnce(round) }
        // The pool keeps at most 64 pipes (128 descriptors); nothing else may stay open.
        #expect(openDescriptors() <= before + 130)

        func exchangeOnce(_ round: Int) async throws {
            var random = SplitMix64(state: UInt64(round + 1) &* 0x9E37_79B9_7F4A_7C15)
            let app = try LoopbackSockets.connectedPair(), upstream = try LoopbackSockets.connectedPair()
            defer { close(app.near); close(upstream.far) }
            let request = random.bytes(200_000 + round), answer = random.bytes(90_000 - round)
            let received = Mutex<(up: [UInt8], down: [UInt8])>(([], []))
            let outcome = try await Self.relay(app: app.far, upstream: upstream.near) {
                Self.together([
                    { Self.writeAll(app.near, [(request, 0)]) },
                    { Self.writeAll(upstream.far, [(answer, 0)]) },
                    { let bytes = Self.readAll(upstream.far); received.withLock { $0.up = bytes } },
                    { let bytes = Self.readAll(app.near); received.withLock { $0.down = bytes } },
                ])
            }
            let up = Self.same(received.withLock { $0.up }, request), down = Self.same(received.withLock { $0.down }, answer)
            #expect(up.0, "flow \(round), what the upstream received: \(up.1)")
            #expect(down.0, "flow \(round), what the app received: \(down.1)")
            #expect(outcome?.error == nil)
        }
    }
}
