import Crypto
import Foundation
import NetExtLinux
import Testing
import TunnelProtocol
@testable import NetExtTunnel

/// The tunnel server's handshake queue (initiations that carry a cookie go first) and the client's
/// retries of a first connection.
@Suite("Tunnel server: handshake admission")
struct HandshakeAdmissionTests {
    static func item(_ tag: UInt8) -> HandshakeQueue.Item {
        HandshakeQueue.Item(message: [tag], source: SocketAddress(address: [198, 51, 100, tag], port: 40000), local: nil)
    }

    @Test("initiations carrying a cookie are taken before those without, each lane in order; a full lane refuses only its own")
    func cookieLaneFirst() {
        let queue = HandshakeQueue(capacity: 3, cookieCapacity: 2)
        #expect(queue.push(Self.item(1)))
        #expect(queue.push(Self.item(2)))
        #expect(queue.push(Self.item(3)))
        #expect(!queue.push(Self.item(4)), "the lane without cookies holds 3")
        #expect(queue.push(Self.item(10), carriesCookie: true))
        #expect(queue.push(Self.item(11), carriesCookie: true))
        #expect(!queue.push(Self.item(12), carriesCookie: true), "the cookie lane holds 2")
        #expect(queue.count == 5)
        let order = (0..<6).map { _ in queue.pop(waitMilliseconds: 10)?.message.first }
        #expect(order == [10, 11, 1, 2, 3, nil])
    }

    @Test("what goes to the cookie lane: a mac2 that is not all zeros, as an initiator with a cookie sends")
    func carriesMAC2() throws {
        let server = Curve25519.KeyAgreement.PrivateKey()
        let client = Curve25519.KeyAgreement.PrivateKey()
        let without = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 7, cookie: nil, timing: .standard)
        let with = try HandshakeInitiator(
            staticKey: client, responderPublicKey: server.publicKey, senderIndex: 8, cookie: [UInt8](repeating: 0x5a, count: 16), timing: .standard)
        #expect(!MessageAuthentication.carriesMAC2(without.initiation))
        #expect(MessageAuthentication.carriesMAC2(with.initiation))
        #expect(!MessageAuthentication.carriesMAC2([0, 1]), "shorter than a MAC")
    }

    @Test("a first connection retries after 1, 2 and 4 s, then every rekeyTimeout")
    func connectRetries() {
        let delays = (0..<6).map { TunnelClient.connectRetryDelay(attempt: $0, rekeyTimeout: 5) }
        #expect(delays == [1, 2, 4, 5, 5, 5])
        #expect(TunnelClient.connectRetryDelay(attempt: 10_000, rekeyTimeout: 5) == 5)
        #expect(TunnelClient.connectRetryDelay(attempt: 0, rekeyTimeout: 0.5) == 0.5, "a shorter rekeyTimeout (tests' timing) bounds every wait")
    }
}
