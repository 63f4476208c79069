import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

@testable import MASQUERelay

/// The relay's idle closer on an embedded channel with a manual clock: GOAWAY after the idle
/// deadline, then a grace for a stream the client opened before the GOAWAY reached it (RFC
/// 9113 §6.8), and the close once no stream is open. The relay end to end: RelayLimitsTests.
@Suite("The relay's graceful close of idle connections")
struct RelayIdleConnectionCloserTests {
    /// An active connection channel with the closer (10 s idle, 1 s grace), on `loop`.
    static func connection(_ loop: EmbeddedEventLoop) throws -> (EmbeddedChannel, RelayIdleConnectionCloser, RelayCounters) {
        let counters = RelayCounters()
        let closer = RelayIdleConnectionCloser(idleSeconds: 10, graceSeconds: 1, counters: counters)
        let channel = EmbeddedChannel(handler: closer, loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, closer, counters)
    }

    /// The GOAWAY written, if one was: its last stream identifier and error code.
    static func goAway(on channel: EmbeddedChannel) throws -> (HTTP2StreamID, HTTP2ErrorCode)? {
        guard let frame = try channel.readOutbound(as: HTTP2Frame.self), case .goAway(let last, let code, _) = frame.payload else { return nil }
        return (last, code)
    }

    @Test("no stream: GOAWAY (largest identifier, NO_ERROR) at the deadline, the close one grace later, counted once")
    func idle() throws {
        let loop = EmbeddedEventLoop()
        let (channel, _, counters) = try Self.connection(loop)
        loop.advanceTime(by: .seconds(9))
        #expect(try Self.goAway(on: channel) == nil)
        loop.advanceTime(by: .seconds(1))
        let sent = try #require(try Self.goAway(on: channel))
        #expect(sent.0 == .maxID && sent.1 == .noError)
        #expect(channel.isActive, "the grace runs first")
        loop.advanceTime(by: .milliseconds(1_000))
        #expect(!channel.isActive)
        #expect(counters.current.idleConnectionsClosed == 1)
    }

    @Test("a stream opened in the grace is served: the connection closes when it ends, not at the grace's end")
    func streamInGrace() throws {
        let loop = EmbeddedEventLoop()
        let (channel, closer, _) = try Self.connection(loop)
        loop.advanceTime(by: .seconds(10))
        #expect(try Self.goAway(on: channel) != nil)
        let stream = EmbeddedChannel(loop: loop)
        closer.opened(stream)
        loop.advanceTime(by: .seconds(5))
        #expect(channel.isActive, "its stream is open")
        stream.close(promise: nil)
        loop.run()
        #expect(!channel.isActive, "the last stream ended after the grace: closed")
    }

    @Test("a stream before the deadline keeps the connection; its end starts the deadline again")
    func busy() throws {
        let loop = EmbeddedEventLoop()
        let (channel, closer, _) = try Self.connection(loop)
        let stream = EmbeddedChannel(loop: loop)
        closer.opened(stream)
        loop.advanceTime(by: .seconds(60))
        #expect(try Self.goAway(on: channel) == nil && channel.isActive)
        stream.close(promise: nil)
        loop.run()
        loop.advanceTime(by: .seconds(9))
        #expect(try Self.goAway(on: channel) == nil)
        loop.advanceTime(by: .seconds(1))
        #expect(try Self.goAway(on: channel) != nil)
    }
}
