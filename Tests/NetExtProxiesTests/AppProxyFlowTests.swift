import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux
import Synchronization
import Testing
@testable import NetExt

/// The provider side of the hand-over, in one process and without root: a loopback connection
/// stands for the one the kernel accepted through tproxy; its socket goes over a sequenced-packet
/// pair as netextd sends it.
// Serialized: each test blocks a thread of the cooperative pool on its app's socket while the
// provider's tasks need another; two at once on a two-core machine would leave them none.
@Suite("App proxy flows: the socket handed over, read and written, relayed, declined", .serialized)
struct AppProxyFlowTests {
    /// Echoes through `readData`/`write` (port 7), relays to a connection it made to `upstream`
    /// (port 8) or to one the relay makes (port 10), declines the rest.
    final class TestProvider: AppProxyProvider {
        let upstream: SocketAddress
        let seen = Mutex<[AppProxyFlowOffer.Transport: [String]]>([:])
        init(upstream: SocketAddress) { self.upstream = upstream }
        func startProxy(options: [String: JSONValue]?, context: AppProxyContext) async throws {}
        func stopProxy(with reason: ProviderStopReason) async {}
        func handleNewFlow(_ flow: AppProxyTCPFlow) -> Bool {
            seen.withLock { $0[.tcp, default: []].append(flow.metaData.sourceAppSigningIdentifier) }
            switch flow.remoteEndpoint.port {
            case 7:
                Task {
                    let data = (try? await flow.readData()) ?? Data()
                    try? await flow.write(Data("echo: ".utf8) + data)
                    flow.closeWriteWithError(nil)
                }
                return true
            case 8:
                guard let socket = TCPSocket.connect(to: upstream, timeoutMilliseconds: 2_000) else { return false }
                socket.setTimeouts(milliseconds: 0)
                flow.relay(with: socket.detach())
                return true
            case 10:
                flow.relay(connectingTo: NetworkEndpoint(hostname: upstream.hostText, port: upstream.port))
                return true
            default:
                return false
            }
        }
    }

    /// Runs `body`, which blocks on sockets, on a thread of its own: the test's waits must not
    /// hold the cooperative pool the provider's tasks run on (hundreds of tests share it).
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// A connected pair: the app's socket and the one the kernel accepted for it.
    static func connection() throws -> (app: TCPSocket, accepted: TCPSocket) {
        let listener = try TCPSocket.listen(on: SocketAddress("127.0.0.1:0")!)
        let address = try #require(SocketEndpoints.local(of: listener.fd))
        let app = try #require(TCPSocket.connect(to: address, timeoutMilliseconds: 2_000))
        let accepted = try #require(try listener.accept(waitMilliseconds: 2_000))
        app.setTimeouts(milliseconds: 20_000)
        return (app, accepted)
    }

    /// An upstream that answers each of two connections with "up: " and what it read, then closes.
    static func upstreamServer() throws -> (address: SocketAddress, listener: TCPSocket) {
        let listener = try TCPSocket.listen(on: SocketAddress("127.0.0.1:0")!)
        let address = try #require(SocketEndpoints.local(of: listener.fd))
        let thread = Thread {
            for _ in 0..<2 {
                guard let client = try? listener.accept(waitMilliseconds: 30_000) else { return }
                client.setTimeouts(milliseconds: 5_000)
                if let bytes = client.read(exactly: 5) { _ = client.write(Array("up: ".utf8) + bytes) }
                client.close()
            }
        }
        thread.start()
        return (address, listener)
    }

    static func offer(id: UInt64, port: UInt16) -> AppProxyFlowOffer {
        AppProxyFlowOffer(
            id: id, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "192.0.2.7", port: port),
            localEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: 40000), sourceAppIdentifier: "org.example.App\(id)", processIdentifier: 42)
    }

    /// The end notices read so far (in order), past the answers.
    static let ended = Mutex<[Int32: [UInt64]]>([:])

    /// The next answer on `channel`; end notices before it are kept in ``ended``.
    static func answer(over channel: Int32) throws -> AppProxyFlowCodec.Answer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let received = try DescriptorMessages.receive(into: buffer, over: channel)
            #expect(received.descriptor == nil)
            switch try AppProxyFlowCodec.decodeProviderMessage(UnsafeRawBufferPointer(rebasing: buffer[..<received.length])) {
            case .answer(let answer): return answer
            case .ended(let id): ended.withLock { $0[channel, default: []].append(id) }
            }
        }
    }

    /// Reads end notices until `ids` have all arrived (at most 5 s).
    static func awaitEnded(_ ids: Set<UInt64>, over channel: Int32) throws -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        var pollTarget = pollfd(fd: channel, events: Int16(POLLIN), revents: 0)
        let deadline = ContinuousClock.now + .seconds(5)
        while !ids.isSubset(of: Set(ended.withLock { $0[channel] ?? [] })) {
            guard ContinuousClock.now < deadline else { return false }
            guard poll(&pollTarget, 1, 100) > 0 else { continue }
            let received = try DescriptorMessages.receive(into: buffer, over: channel)
            if case .ended(let id) = try AppProxyFlowCodec.decodeProviderMessage(UnsafeRawBufferPointer(rebasing: buffer[..<received.length])) {
                ended.withLock { $0[channel, default: []].append(id) }
            }
        }
        return true
    }

    /// Echoes UDP flows through `readDatagrams`/`writeDatagrams`.
    final class UDPEchoProvider: AppProxyProvider {
        func startProxy(options: [String: JSONValue]?, context: AppProxyContext) async throws {}
        func stopProxy(with reason: ProviderStopReason) async {}
        func handleNewFlow(_ flow: AppProxyTCPFlow) -> Bool { false }
        func handleNewUDPFlow(_ flow: AppProxyUDPFlow, initialRemoteEndpoint: NetworkEndpoint) -> Bool {
            Task {
                for _ in 0..<2 {
                    guard let datagrams = try? await flow.readDatagrams(timeout: .seconds(30)), !datagrams.isEmpty else { break }
                    try? flow.writeDatagrams(datagrams.map { FlowDatagram(data: Data("echo ".utf8) + $0.data, endpoint: $0.endpoint) })
                }
                flow.close()
            }
            return initialRemoteEndpoint.port == 7
        }
    }

    @Test("a UDP flow: its first datagram read first, later ones from its socket, answers reach the app; another destination refused as sender")
    func udpFlow() async throws {
        let (daemon, providerEnd) = try SocketPair.makePackets()
        defer { SocketPair.close(daemon) }
        AppProxyFlowServer.start(UDPEchoProvider(), channel: providerEnd, returnsDeclinedFlows: false)
        // Two connected loopback UDP sockets: the app's, and the one netextd makes for the flow.
        let app = try UDPSocket(bindingTo: SocketAddress("127.0.0.1:0")!)
        let flowSide = try UDPSocket(bindingTo: SocketAddress("127.0.0.1:0")!)
        let appAddress = try #require(app.localAddress), flowAddress = try #require(flowSide.localAddress)
        try app.connect(to: flowAddress)
        try flowSide.connect(to: appAddress)
        let offer = AppProxyFlowOffer(
            id: 9, transport: .udp, remoteEndpoint: NetworkEndpoint(hostname: "192.0.2.7", port: 7),
            localEndpoint: NetworkEndpoint(hostname: appAddress.hostText, port: appAddress.port), sourceAppIdentifier: "org.example.App",
            initialDatagram: Array("first".utf8))
        // The flow's socket goes over as netextd sends it (UDPSocket.close would shut it down
        // for the copy too; this process's descriptor is simply closed).
        try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: flowSide.fd, over: daemon)
        SocketPair.close(flowSide.fd)
        #expect(try await Self.offPool { try Self.answer(over: daemon) } == .init(flowID: 9, handled: true))
        // The app's side: a datagram back (at most 20 s), or nil.
        let receive: @Sendable () -> [UInt8]? = {
            guard DescriptorWait.readable([app.fd], milliseconds: 20_000) == [true] else { return nil }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 8)
            defer { buffer.deallocate() }
            guard let received = try? app.receive(into: buffer) else { return nil }
            return Array(buffer[0..<received.count])
        }
        #expect(try await Self.offPool(receive) == Array("echo first".utf8))
        try Array("second".utf8).withUnsafeBytes { try app.send($0) }
        #expect(try await Self.offPool(receive) == Array("echo second".utf8))
        app.close()
        // A flow can send only as its destination.
        let (_, other) = try SocketPair.makePackets()
        let flow = AppProxyUDPFlow(offer: offer, descriptor: other)
        #expect(throws: NetExtError.self) { try flow.writeDatagrams([FlowDatagram(data: Data([1]), endpoint: NetworkEndpoint(hostname: "192.0.2.8", port: 7))]) }
        flow.close()
    }

    @Test("a transparent proxy's declined flow comes back to netextd with the answer, still connected to the app")
    func declinedFlowReturns() async throws {
        let (daemon, providerEnd) = try SocketPair.makePackets()
        defer { SocketPair.close(daemon) }
        let upstream = try Self.upstreamServer()
        AppProxyFlowServer.start(TestProvider(upstream: upstream.address), channel: providerEnd, returnsDeclinedFlows: true)
        let declined = try Self.connection()
        try DescriptorMessages.send(AppProxyFlowCodec.encode(Self.offer(id: 6, port: 9)), descriptor: declined.accepted.fd, over: daemon)
        declined.accepted.close()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        let received = try DescriptorMessages.receive(into: buffer, over: daemon)
        #expect(try AppProxyFlowCodec.decodeAnswer(UnsafeRawBufferPointer(rebasing: buffer[..<received.length])) == .init(flowID: 6, handled: false))
        let returned = try #require(received.descriptor)
        // The returned socket is the app's connection: what is written on it reaches the app.
        #expect(SocketEndpoints.remote(of: returned) == SocketEndpoints.local(of: declined.app.fd))
        let bytes = Array("direct".utf8)
        #expect(bytes.withUnsafeBytes { (try? StreamIO.sendAll(returned, $0).get()) != nil })
        StreamIO.setResetOnClose(returned, false)
        StreamIO.shutdown(returned, read: true, write: true)
        SocketPair.close(returned)
        #expect(try await Self.offPool { Self.readAll(declined.app) } == "direct")
        _ = upstream.listener
    }

    static func readAll(_ socket: TCPSocket) -> String {
        var bytes: [UInt8] = []
        while let byte = socket.read(exactly: 1) { bytes += byte }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("taken flows are answered handled and carry bytes both ways, and are reported ended once over; a declined flow is reset (and never reported); metadata arrives")
    func handOver() async throws {
        let (daemon, providerEnd) = try SocketPair.makePackets()
        defer { SocketPair.close(daemon) }
        let upstream = try Self.upstreamServer()
        let provider = TestProvider(upstream: upstream.address)
        AppProxyFlowServer.start(provider, channel: providerEnd, returnsDeclinedFlows: false)

        // Read and write through the flow.
        let echo = try Self.connection()
        try DescriptorMessages.send(AppProxyFlowCodec.encode(Self.offer(id: 1, port: 7)), descriptor: echo.accepted.fd, over: daemon)
        echo.accepted.close()
        #expect(try await Self.offPool { try Self.answer(over: daemon) } == .init(flowID: 1, handled: true))
        #expect(echo.app.write(Array("hello".utf8)))
        #expect(try await Self.offPool { Self.readAll(echo.app) } == "echo: hello")

        // Relayed in the kernel to an upstream connection.
        let relayed = try Self.connection()
        try DescriptorMessages.send(AppProxyFlowCodec.encode(Self.offer(id: 2, port: 8)), descriptor: relayed.accepted.fd, over: daemon)
        relayed.accepted.close()
        #expect(try await Self.offPool { try Self.answer(over: daemon) } == .init(flowID: 2, handled: true))
        #expect(relayed.app.write(Array("world".utf8)))
        #expect(try await Self.offPool { Self.readAll(relayed.app) } == "up: world")

        // Connected by the relay's loop without blocking, then relayed.
        let connecting = try Self.connection()
        try DescriptorMessages.send(AppProxyFlowCodec.encode(Self.offer(id: 5, port: 10)), descriptor: connecting.accepted.fd, over: daemon)
        connecting.accepted.close()
        #expect(try await Self.offPool { try Self.answer(over: daemon) } == .init(flowID: 5, handled: true))
        #expect(connecting.app.write(Array("again".utf8)))
        #expect(try await Self.offPool { Self.readAll(connecting.app) } == "up: again")

        // Declined: the app's connection is reset.
        let declined = try Self.connection()
        try DescriptorMessages.send(AppProxyFlowCodec.encode(Self.offer(id: 3, port: 9)), descriptor: declined.accepted.fd, over: daemon)
        declined.accepted.close()
        #expect(try await Self.offPool { try Self.answer(over: daemon) } == .init(flowID: 3, handled: false))
        var byte: UInt8 = 0
        let result = recv(declined.app.fd, &byte, 1, 0)
        #expect(result < 0 && errno == ECONNRESET, "a declined flow is reset, not ended in order")

        // A malformed message costs nothing but itself; the next flow is served.
        try DescriptorMessages.send([0x11, 0, 1], descriptor: nil, over: daemon)
        let after = try Self.connection()
        try DescriptorMessages.send(AppProxyFlowCodec.encode(Self.offer(id: 4, port: 7)), descriptor: after.accepted.fd, over: daemon)
        after.accepted.close()
        #expect(try await Self.offPool { try Self.answer(over: daemon) } == .init(flowID: 4, handled: true))
        #expect(after.app.write(Array("again".utf8)))
        #expect(try await Self.offPool { Self.readAll(after.app) } == "echo: again")
        #expect(provider.seen.withLock { $0[.tcp] } == ["org.example.App1", "org.example.App2", "org.example.App5", "org.example.App3", "org.example.App4"])
        // Every taken flow, once over (the apps close their ends), is reported ended, once; the
        // declined one never.
        for app in [echo.app, relayed.app, connecting.app, after.app] { app.close() }
        #expect(try await Self.offPool { try Self.awaitEnded([1, 2, 4, 5], over: daemon) })
        let ended = Self.ended.withLock { $0[daemon] ?? [] }
        #expect(Set(ended) == [1, 2, 4, 5] && ended.count == 4, "\(ended)")
        _ = upstream.listener
    }

    @Test("an end notice goes once, and never before the flow's answer: a flow ended before it is armed is reported at arming")
    func endNoticeOrder() {
        let sent = Mutex(0)
        let early = FlowEndNotice()
        early.end()
        #expect(sent.withLock { $0 } == 0, "not before the answer")
        early.arm { sent.withLock { $0 += 1 } }
        #expect(sent.withLock { $0 } == 1)
        early.end()
        early.arm { sent.withLock { $0 += 1 } }
        #expect(sent.withLock { $0 } == 1, "once")

        let later = FlowEndNotice()
        later.arm { sent.withLock { $0 += 10 } }
        #expect(sent.withLock { $0 } == 1)
        later.end()
        later.end()
        #expect(sent.withLock { $0 } == 11)

        let declined = FlowEndNotice()
        declined.end()
        #expect(sent.withLock { $0 } == 11, "a flow never armed (declined) is never reported")
    }
}
