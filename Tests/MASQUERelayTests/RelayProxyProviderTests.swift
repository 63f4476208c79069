import Foundation
import Glibc
import MASQUERelay
import NetExtCore
import NetExtIPC
import NetExtLinux
import NetExtTestSupport
import NIOSSL
import Testing
@testable import NetExt
@testable import RelayProvider

/// The built-in relay provider in one process, without root: flows handed to it as netextd
/// hands them (a loopback connection standing for the one the kernel accepted, its socket over
/// a sequenced-packet pair) are carried through `netext-server relay`'s listener to echo servers.
@Suite("Relay provider: flows handed over and carried through a relay", .serialized)
struct RelayProxyProviderTests {
    /// The next answer on `channel` (end notices before it are skipped), off the task pool.
    static func answer(over channel: Int32) async throws -> AppProxyFlowCodec.Answer {
        try await offPool {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
            defer { buffer.deallocate() }
            while true {
                let received = try DescriptorMessages.receive(into: buffer, over: channel)
                if let returned = received.descriptor { SocketPair.close(returned) }
                if case .answer(let answer) = try AppProxyFlowCodec.decodeProviderMessage(UnsafeRawBufferPointer(rebasing: buffer[..<received.length])) {
                    return answer
                }
            }
        }
    }

    static func settings(relayPort: Int) -> RelayProtocol {
        RelayProtocol(
            relays: [RelayHop(http2RelayURL: "https://127.0.0.1:\(relayPort)", additionalHTTPHeaderFields: ["Proxy-Authorization": "Bearer provider-token"])],
            matchDomains: ["office.example.test"], excludedFQDNs: ["login.office.example.test"])
    }

    /// A relay (with echo servers) and the provider started for it, handed flows over `daemon`
    /// (netextd's end of the flow channel) as netextd hands them over.
    static func withProvider(_ body: (RelayServer, RelayServerTests.EchoServers, RelayProxyProvider, Int32) async throws -> Void) async throws {
        try await RelayServerTests.withRelay(tokens: ["provider-token"]) { relay, echo, certificates in
            let provider = RelayProxyProvider()
            try provider.start(settings: Self.settings(relayPort: relay.port), trustRoots: .certificates(try NIOSSLCertificate.fromPEMFile(certificates.caFile)))
            let (daemon, providerEnd) = try SocketPair.makePackets()
            defer { SocketPair.close(daemon) }
            AppProxyFlowServer.start(provider, channel: providerEnd, returnsDeclinedFlows: true)
            try await body(relay, echo, provider, daemon)
        }
    }

    @Test("a TCP flow to a match domain goes through the relay and ends in order (not reset) though handed over set to reset; an excluded FQDN's flow is declined")
    func tcpFlows() async throws {
        try await Self.withProvider { relay, echo, provider, daemon in

            let pair = try LoopbackSockets.connectedPair(timeoutSeconds: 5)
            defer { close(pair.near) }
            StreamIO.setResetOnClose(pair.far, true)  // as netextd hands a flow over
            let offer = AppProxyFlowOffer(
                id: 1, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: echo.tcpPort),
                localEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: 40000), remoteHostname: "wiki.office.example.test", sourceAppIdentifier: "org.example.browser")
            try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: pair.far, over: daemon)
            SocketPair.close(pair.far)
            #expect(try await Self.answer(over: daemon) == .init(flowID: 1, handled: true))
            let message = Array("GET / through the relay provider".utf8)
            _ = send(pair.near, message, message.count, 0)
            #expect(try await RelayClientTests.receive(pair.near, count: message.count) == message)
            shutdown(pair.near, Int32(SHUT_WR))
            #expect(try await RelayClientTests.readsEnd(pair.near), "the flow ends in order: the app reads its end, not a reset")
            #expect(relay.counters.current.tcpStreams == 1)

            let excluded = try LoopbackSockets.connectedPair(timeoutSeconds: 5)
            defer { close(excluded.near) }
            let declined = AppProxyFlowOffer(
                id: 2, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: echo.tcpPort),
                localEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: 40001), remoteHostname: "login.office.example.test", sourceAppIdentifier: "org.example.browser")
            try DescriptorMessages.send(AppProxyFlowCodec.encode(declined), descriptor: excluded.far, over: daemon)
            SocketPair.close(excluded.far)
            #expect(try await Self.answer(over: daemon) == .init(flowID: 2, handled: false))
            #expect(relay.counters.current.tcpStreams == 1, "the declined flow never reached the relay")
            let counters = provider.counters
            #expect(counters.tcpCarried == 1 && counters.declined == 1 && counters.failed == 0, "\(counters)")
            await provider.stopProxy(with: .userInitiated)
        }
    }

    @Test("netextd's resolver flow (a stream socket pair, no address, the DoH server's name) goes through the relay to that name though no match domain covers it; an app's flow to the same name is declined")
    func resolverFlow() async throws {
        try await Self.withProvider { relay, echo, provider, daemon in
            var fds: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            defer { close(fds[0]) }
            let offer = AppProxyFlowOffer(
                id: UInt64.max, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "0.0.0.0", port: echo.tcpPort),
                localEndpoint: NetworkEndpoint(hostname: "0.0.0.0", port: 0), remoteHostname: "localhost", sourceAppIdentifier: RelayProtocol.resolverFlowSource)
            try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: fds[1], over: daemon)
            SocketPair.close(fds[1])
            #expect(try await Self.answer(over: daemon) == .init(flowID: UInt64.max, handled: true))
            let message = Array("a DoH connection through the relay".utf8)
            _ = send(fds[0], message, message.count, 0)
            #expect(try await RelayClientTests.receive(fds[0], count: message.count) == message, "carried to the name, which the relay looked up")
            #expect(relay.counters.current.tcpStreams == 1)

            let app = try LoopbackSockets.connectedPair(timeoutSeconds: 5)
            defer { close(app.near) }
            let appOffer = AppProxyFlowOffer(
                id: 7, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: echo.tcpPort),
                localEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: 40002), remoteHostname: "localhost", sourceAppIdentifier: "org.example.browser")
            try DescriptorMessages.send(AppProxyFlowCodec.encode(appOffer), descriptor: app.far, over: daemon)
            SocketPair.close(app.far)
            #expect(try await Self.answer(over: daemon) == .init(flowID: 7, handled: false))
            #expect(relay.counters.current.tcpStreams == 1)
            await provider.stopProxy(with: .userInitiated)
        }
    }

    @Test("a UDP flow to a match domain: its first datagram and a later one reach the UDP echo through connect-udp, the answers reach the app")
    func udpFlow() async throws {
        try await Self.withProvider { relay, echo, provider, daemon in
            let app = try UDPSocket(bindingTo: SocketAddress("127.0.0.1:0")!)
            let flowSide = try UDPSocket(bindingTo: SocketAddress("127.0.0.1:0")!)
            let appAddress = try #require(app.localAddress), flowAddress = try #require(flowSide.localAddress)
            try app.connect(to: flowAddress)
            try flowSide.connect(to: appAddress)
            let offer = AppProxyFlowOffer(
                id: 3, transport: .udp, remoteEndpoint: NetworkEndpoint(hostname: "127.0.0.1", port: echo.udpPort),
                localEndpoint: NetworkEndpoint(hostname: appAddress.hostText, port: appAddress.port), remoteHostname: "dns.office.example.test",
                sourceAppIdentifier: "org.example.App", initialDatagram: Array("first".utf8))
            try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: flowSide.fd, over: daemon)
            SocketPair.close(flowSide.fd)
            #expect(try await Self.answer(over: daemon) == .init(flowID: 3, handled: true))
            let receive: @Sendable () -> [UInt8]? = {
                guard DescriptorWait.readable([app.fd], milliseconds: 10_000) == [true] else { return nil }
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 8)
                defer { buffer.deallocate() }
                guard let received = try? app.receive(into: buffer) else { return nil }
                return Array(buffer[0..<received.count])
            }
            #expect(try await offPool(receive) == Array("echo:first".utf8))
            try Array("second".utf8).withUnsafeBytes { try app.send($0) }
            #expect(try await offPool(receive) == Array("echo:second".utf8))
            #expect(relay.counters.current.udpStreams == 1)
            app.close()
            await provider.stopProxy(with: .userInitiated)
        }
    }

    @Test("the provider's rules: host rules for match domains and FQDNs (every address without any), excluded domains excluded; settings it cannot honour refused")
    func rulesAndRefusals() throws {
        let rules = RelayProxyProvider.networkSettings(for: RelayProtocol(
            relays: [RelayHop(http2RelayURL: "https://r.example")], matchDomains: [".office.example.test"], excludedDomains: ["public.office.example.test"],
            matchFQDNs: ["git.example.org"], excludedFQDNs: ["login.office.example.test"]))
        #expect(rules.includedNetworkRules.map(\.description) == [
            NetworkRule(destinationHost: NetworkEndpoint(hostname: "office.example.test", port: 0)).description,
            NetworkRule(destinationHost: NetworkEndpoint(hostname: "git.example.org", port: 0)).description,
        ])
        #expect(rules.excludedNetworkRules.count == 1)
        let everything = RelayProxyProvider.networkSettings(for: RelayProtocol(relays: [RelayHop(http2RelayURL: "https://r.example")]))
        #expect(everything.includedNetworkRules.count == 2)
        func refusal(_ relay: [String: JSONValue]) -> String? {
            do { _ = try RelayProxyProvider.settings(from: ["relay": .object(relay)]); return nil } catch { return error.message }
        }
        #expect(refusal(["relays": .array([.object(["http2RelayURL": .string("https://r.example")])])]) == nil)
        #expect(refusal(["relays": .array([])])?.contains("relays must name at least one relay") == true)
        // A relay naming an identity is taken; its identity comes with the start options.
        #expect(refusal(["relays": .array([.object(["http2RelayURL": .string("https://r.example"), "identityReference": .string("/etc/netext/relay.pem")])])]) == nil)
        #expect(refusal(["relays": .array([.object(["http2RelayURL": .string("https://r.example"), "rawPublicKeys": .array([.string("MAA=")])])])]) == nil)
        #expect(throws: NetExtError.self) { try RelayProxyProvider.settings(from: [:]) }
    }
}
