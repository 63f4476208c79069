import Crypto
import Foundation
import Testing
@testable import TunnelProtocol

@Suite("Noise IK handshake")
struct HandshakeTests {
    let client = Curve25519.KeyAgreement.PrivateKey()
    let server = Curve25519.KeyAgreement.PrivateKey()
    let assignment = TunnelAssignment(addresses: ["10.99.0.2/32", "fd99::2/128"], includedRoutes: ["10.20.0.0/16"], dnsServers: ["10.20.0.53"], matchDomains: ["office.test"], mtu: 1420)

    func handshake(now: Date = Date()) throws -> (TransportSession, TransportSession, TunnelAssignment) {
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 7)
        #expect(initiator.initiation.count == WireSize.initiation)
        let received = try HandshakeResponder.consume(initiator.initiation, staticKey: server)
        #expect(received.initiatorStaticKey.rawRepresentation == client.publicKey.rawRepresentation)
        #expect(received.initiatorIndex == 7)
        let (response, serverSession) = try received.respond(senderIndex: 99, assignment: assignment, now: now)
        let (clientSession, pushed) = try initiator.consumeResponse(response, now: now)
        return (clientSession, serverSession, pushed)
    }

    @Test("both sides derive matching transport keys and the server's settings arrive")
    func roundTrip() throws {
        var (clientSession, serverSession, pushed) = try handshake()
        #expect(pushed == assignment)
        #expect(clientSession.localIndex == 7 && clientSession.remoteIndex == 99)
        #expect(serverSession.localIndex == 99 && serverSession.remoteIndex == 7)
        for size in [0, 1, 15, 16, 17, 1280, 1420, 65_000] {
            let packet = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let sealed = try clientSession.seal(packet)
            #expect((sealed.count - WireSize.transportHeader - WireSize.tag) % 16 == 0)
            let opened = try serverSession.open(sealed)
            #expect(Array(opened.prefix(size)) == packet)
            #expect(opened.dropFirst(size).allSatisfy { $0 == 0 }, "padding is zeros")
            let back = try clientSession.open(try serverSession.seal(packet))
            #expect(Array(back.prefix(size)) == packet)
        }
    }

    @Test("every handshake makes fresh keys (forward secrecy from the ephemerals)")
    func freshKeys() throws {
        var (first, _, _) = try handshake()
        var (_, secondServer, _) = try handshake()
        let sealed = try first.seal([1, 2, 3])
        do { let error = refusal { try secondServer.open(sealed.replacingIndex(with: secondServer.localIndex)) }; #expect(error == TunnelProtocolError.decryptionFailed(stage: "transport")) }
    }

    @Test("an initiation for another server fails mac1 before any Diffie-Hellman")
    func wrongServer() throws {
        let other = Curve25519.KeyAgreement.PrivateKey()
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: other.publicKey, senderIndex: 1)
        #expect(throws: TunnelProtocolError.badMAC1) { try HandshakeResponder.consume(initiator.initiation, staticKey: server) }
    }

    /// Every byte but mac2 is covered (mac2 is only checked under load; see the cookie tests).
    @Test("a tampered initiation is refused", arguments: Array(stride(from: 0, to: WireSize.initiation - WireSize.mac, by: 5)))
    func tamperedInitiation(position: Int) throws {
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 1)
        var message = initiator.initiation
        message[position] ^= 0x40
        #expect(throws: TunnelProtocolError.self) { try HandshakeResponder.consume(message, staticKey: server) }
    }

    @Test("a tampered response is refused")
    func tamperedResponse() throws {
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 1)
        let received = try HandshakeResponder.consume(initiator.initiation, staticKey: server)
        let (response, _) = try received.respond(senderIndex: 2, assignment: assignment)
        for position in stride(from: 0, to: response.count - WireSize.mac, by: 3) {
            var copy = response
            copy[position] ^= 0x01
            #expect(throws: TunnelProtocolError.self) { try initiator.consumeResponse(copy) }
        }
        #expect(throws: TunnelProtocolError.self) { try initiator.consumeResponse(Array(response.dropLast())) }
    }

    @Test("the initiator's identity and timestamp are not visible on the wire")
    func identityHiding() throws {
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 1)
        let publicKey = Array(client.publicKey.rawRepresentation)
        let message = initiator.initiation
        let found = (0...(message.count - publicKey.count)).contains { Array(message[$0..<$0 + publicKey.count]) == publicKey }
        #expect(!found)
    }

    @Test("timestamps order initiations, so a responder can refuse replays")
    func timestamps() throws {
        let early = HandshakeTimestamp(date: Date(timeIntervalSince1970: 1_800_000_000))
        let late = HandshakeTimestamp(date: Date(timeIntervalSince1970: 1_800_000_000.5))
        #expect(early < late)
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 1, timestamp: late)
        #expect(try HandshakeResponder.consume(initiator.initiation, staticKey: server).timestamp == late)
    }
}

extension Array where Element == UInt8 {
    /// A transport message re-addressed to another receiver index (for cross-session tests).
    func replacingIndex(with index: UInt32) -> [UInt8] {
        var copy = self
        var bytes: [UInt8] = []
        bytes.appendBigEndian(index)
        copy.replaceSubrange(4..<8, with: bytes)
        return copy
    }
}

@Suite("Key material stays out of logs")
struct RedactionTests {
    @Test("describing or dumping handshake and session values shows no key material")
    func redacted() throws {
        let client = Curve25519.KeyAgreement.PrivateKey()
        let server = Curve25519.KeyAgreement.PrivateKey()
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 5)
        let received = try HandshakeResponder.consume(initiator.initiation, staticKey: server)
        let (_, session) = try received.respond(senderIndex: 6, assignment: TunnelAssignment(addresses: ["10.0.0.2/32"]))
        for value in [String(describing: initiator), String(describing: received), String(describing: session), String(reflecting: session)] {
            #expect(value.contains("<redacted>"))
            #expect(!value.contains("Key"), "\(value)")
        }
        var dumped = ""
        dump(received, to: &dumped)
        #expect(!dumped.contains("chainingKey") && !dumped.contains("keyBytes"), "\(dumped)")
    }
}
