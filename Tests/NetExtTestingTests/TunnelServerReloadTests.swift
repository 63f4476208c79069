import Crypto
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtTestSupport
import NetExtTunnel
import Testing
import TunnelProtocol

/// `netext-server tunnel` reloading its peers live (SIGHUP runs `TunnelServer.reload`): a
/// server in this process on a loopback port, clients played by raw handshakes over UDP.
@Suite("Tunnel server: peers reloaded without a restart")
struct TunnelServerReloadTests {
    static let serverKey = Curve25519.KeyAgreement.PrivateKey()

    static func configuration(peers: [(String, Curve25519.KeyAgreement.PrivateKey)], mtu: Int = 1420) throws -> TunnelServerConfiguration {
        let list = peers.map { #"{"name": "\#($0.0)", "publicKey": "\#(TunnelKeys.base64($0.1.publicKey))"}"# }.joined(separator: ", ")
        let json = #"{"privateKey": "\#(serverKey.rawRepresentation.base64EncodedString())", "listen": "127.0.0.1:0", "ipv4Pool": "10.99.0.0/24", "mtu": \#(mtu), "peers": [\#(list)]}"#
        return try JSONDecoder().decode(TunnelServerConfiguration.self, from: Data(json.utf8))
    }

    /// One client handshake from a fresh UDP socket: the session and assignment, or nil when the
    /// server does not answer within a second.
    func handshake(_ key: Curve25519.KeyAgreement.PrivateKey, server: SocketAddress, index: UInt32) async throws -> (TransportSession, TunnelAssignment, UDPSocket)? {
        let socket = try UDPSocket(bindingTo: SocketAddress("127.0.0.1:0")!)
        socket.setReceiveTimeout(milliseconds: 1000)
        let initiator = try HandshakeInitiator(staticKey: key, responderPublicKey: Self.serverKey.publicKey, senderIndex: index)
        try initiator.initiation.withUnsafeBytes { try socket.send($0, to: server) }
        let answer: [UInt8]? = try await offPool {
            var buffer = [UInt8](repeating: 0, count: 2048)
            // The receive timeout surfaces as EAGAIN: no answer.
            guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else { return nil }
            return Array(buffer[..<received.count])
        }
        guard let answer else { socket.close(); return nil }
        let (session, assignment) = try initiator.consumeResponse(answer)
        return (session, assignment, socket)
    }

    /// Runs `server` over a packet socketpair (this process plays the networks behind it), waits
    /// until it listens, runs `body` with its address, and stops it whatever happens.
    static func serving(_ server: TunnelServer, interface: String, _ body: (TunnelServer, SocketAddress) async throws -> Void) async throws {
        let (serverEnd, officeEnd) = try SocketPair.makePackets()
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread { try? server.serve(interface: serverEnd, name: interface); finished.signal() }
        try await withCleanup(server, cleanup: { server in
            server.stop()
            _ = await BlockingWork.run { finished.wait(timeout: .now() + 5) }
            close(officeEnd)
        }) { server in
            var address: SocketAddress?
            for _ in 0..<400 where address == nil {
                address = server.listeningAddress
                if address == nil { try await Task.sleep(for: .milliseconds(10)) }
            }
            try await body(server, try #require(address))
        }
    }

    @Test("a peer added while another is connected: the new one handshakes, the old one keeps its session; removed peers are refused; other changes are refused whole")
    func peersChangeLive() async throws {
        let laptop = Curve25519.KeyAgreement.PrivateKey(), phone = Curve25519.KeyAgreement.PrivateKey()
        let server = try TunnelServer(configuration: try Self.configuration(peers: [("laptop", laptop)]), logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() })
        try await Self.serving(server, interface: "reload0") { server, listening in
            guard let (firstSession, laptopAssignment, laptopSocket) = try await handshake(laptop, server: listening, index: 11) else {
                Issue.record("the configured peer got no answer"); return
            }
            var laptopSession = firstSession
            defer { laptopSocket.close() }
            #expect(laptopAssignment.addresses == ["10.99.0.2/32"])
            #expect(try await handshake(phone, server: listening, index: 12) == nil, "an unknown peer is not answered")

            // Add the phone: the laptop is kept as it was.
            let added = try server.reload(try Self.configuration(peers: [("laptop", laptop), ("phone", phone)]))
            #expect(added == PeerReload(added: ["phone"], removed: [], reset: [], kept: 1))
            let phoneHandshake = try await handshake(phone, server: listening, index: 13)
            #expect(phoneHandshake?.1.addresses == ["10.99.0.3/32"], "the added peer handshakes and gets the next address")
            phoneHandshake?.2.close()
            // The laptop's session from before the reload still carries traffic: a keepalive
            // sealed with it is accepted (the server counts it in).
            let before = server.statistics()["laptop"] ?? ""
            let keepalive = try laptopSession.seal([])
            try keepalive.withUnsafeBytes { try laptopSocket.send($0, to: listening) }
            var accepted = false
            for _ in 0..<100 where !accepted {
                accepted = server.statistics()["laptop"] != before
                if !accepted { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(accepted, "the laptop's old session was not accepted after the reload")

            // A file that changes more than the peers is refused; nothing changes.
            #expect(throws: NetExtError.self) { try server.reload(try Self.configuration(peers: [("laptop", laptop)], mtu: 1280)) }
            #expect(server.statistics().keys.contains("phone"))

            // Remove the laptop: its handshakes are no longer answered.
            let removed = try server.reload(try Self.configuration(peers: [("phone", phone)]))
            #expect(removed.removed == ["laptop"] && removed.reset == ["phone"], "\(removed)")
            #expect(try await handshake(laptop, server: listening, index: 14) == nil)
            _ = laptopAssignment
        }
    }
}
