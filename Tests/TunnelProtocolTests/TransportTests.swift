import Crypto
import Foundation
import Testing
@testable import TunnelProtocol

@Suite("Transport, replay window, cookies")
struct TransportTests {
    func sessions(timing: TunnelTiming = .standard, now: Date = Date()) throws -> (TransportSession, TransportSession) {
        let client = Curve25519.KeyAgreement.PrivateKey()
        let server = Curve25519.KeyAgreement.PrivateKey()
        let initiator = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 1, timing: timing)
        let received = try HandshakeResponder.consume(initiator.initiation, staticKey: server)
        let (response, serverSession) = try received.respond(senderIndex: 2, assignment: TunnelAssignment(addresses: ["10.0.0.2/32"]), timing: timing, now: now)
        return (try initiator.consumeResponse(response, now: now).session, serverSession)
    }

    @Test("a replayed transport message is refused; reordering within the window is fine")
    func replay() throws {
        var (client, server) = try sessions()
        let messages = try (0..<100).map { _ in try client.seal([0xAB]) }
        for index in stride(from: 99, through: 0, by: -1) { _ = try server.open(messages[index]) }
        do { let error = refusal { try server.open(messages[42]) }; #expect(error == TunnelProtocolError.replayedCounter(42)) }
    }

    @Test("the replay window accepts each counter once and forgets what is too old")
    func windowProperties() {
        var window = ReplayWindow()
        var generator = SystemRandomNumberGenerator()
        var seen = Set<UInt64>()
        var highest: UInt64 = 0
        for _ in 0..<20_000 {
            let counter = UInt64.random(in: 0..<6000, using: &generator)
            let accepted = window.accept(counter)
            let tooOld = !seen.isEmpty && counter < highest && highest - counter >= ReplayWindow.trackedSpan
            if seen.contains(counter) || tooOld {
                #expect(!accepted, "counter \(counter) highest \(highest)")
            } else if highest < counter || highest - counter < ReplayWindow.trackedSpan {
                #expect(accepted, "counter \(counter) highest \(highest)")
            }
            if accepted {
                seen.insert(counter)
                highest = max(highest, counter)
            }
        }
        var jumpy = ReplayWindow()
        let results = [jumpy.accept(0), jumpy.accept(1_000_000), jumpy.accept(5), jumpy.accept(999_999), jumpy.accept(999_999), jumpy.accept(UInt64.max - 1)]
        // 5 is far behind the highest; 999,999 is accepted once.
        #expect(results == [true, true, false, true, false, true])
    }

    @Test("sessions expire by age and message count; the initiator asks to rekey first")
    func expiry() throws {
        let timing = TunnelTiming(rekeyAfterTime: 10, rejectAfterTime: 20, rekeyAfterMessages: 5, rejectAfterMessages: 8, rekeyTimeout: 1, keepaliveTimeout: 1, rekeyAttemptTime: 5)
        let start = Date()
        var (client, server) = try sessions(timing: timing, now: start)
        #expect(!client.needsRekey(now: start))
        #expect(client.needsRekey(now: start.addingTimeInterval(11)))
        #expect(!server.needsRekey(now: start.addingTimeInterval(11)), "only the initiator rekeys by time")
        for _ in 0..<5 { _ = try server.open(try client.seal([1], now: start), now: start) }
        #expect(client.needsRekey(now: start))
        for _ in 0..<3 { _ = try client.seal([1], now: start) }
        do { let error = refusal { try client.seal([1], now: start) }; #expect(error == TunnelProtocolError.sessionExpired) }
        let late = try server.seal([1], now: start)
        do { let error = refusal { try client.open(late, now: start.addingTimeInterval(21)) }; #expect(error == TunnelProtocolError.sessionExpired) }
    }

    @Test("cookie replies: only the sender of the mac1 can open them, and mac2 binds the source")
    func cookies() throws {
        let client = Curve25519.KeyAgreement.PrivateKey()
        let server = Curve25519.KeyAgreement.PrivateKey()
        var generator = CookieGenerator(responderPublicKey: server.publicKey)
        let source: [UInt8] = [192, 0, 2, 1, 0x30, 0x39]
        let first = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 3)
        let withoutCookie = generator.hasValidMAC2(first.initiation, source: source)
        #expect(!withoutCookie)
        let reply = try generator.reply(to: first.initiation, receiverIndex: 3, source: source)
        #expect(reply.count == WireSize.cookieReply)
        let cookie = try CookieGenerator.openReply(reply, responderPublicKey: server.publicKey, sentMAC1: first.sentMAC1)
        #expect(throws: TunnelProtocolError.self) { try CookieGenerator.openReply(reply, responderPublicKey: server.publicKey, sentMAC1: [UInt8](repeating: 0, count: 16)) }
        let second = try HandshakeInitiator(staticKey: client, responderPublicKey: server.publicKey, senderIndex: 4, cookie: cookie)
        let checks = [
            generator.hasValidMAC2(second.initiation, source: source),
            generator.hasValidMAC2(second.initiation, source: [192, 0, 2, 2, 0x30, 0x39]),
            // Still valid for one more secret lifetime, then not.
            generator.hasValidMAC2(second.initiation, source: source, now: Date().addingTimeInterval(CookieGenerator.secretLifetime + 1)),
            generator.hasValidMAC2(second.initiation, source: source, now: Date().addingTimeInterval(3 * CookieGenerator.secretLifetime + 2)),
        ]
        #expect(checks == [true, false, true, false], "valid; another address; after one rotation; after two")
    }

    @Test("Noise HKDF matches RFC 5869 HKDF with an empty salt-as-chaining-key construction")
    func hkdf() {
        // HKDF-Expand(PRK = HMAC(ck, ikm), info = "", L = 64) split in two equals Noise's HKDF.
        let chainingKey = [UInt8](repeating: 0x0B, count: 32)
        let ikm: [UInt8] = Array("input key material".utf8)
        let (first, second) = NoiseHKDF.derive2(chainingKey: chainingKey, inputKeyMaterial: ikm)
        let reference = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), salt: chainingKey, info: [], outputByteCount: 64)
        let bytes = reference.withUnsafeBytes { Array($0) }
        #expect(first == Array(bytes[0..<32]))
        #expect(second == Array(bytes[32..<64]))
    }

    /// Random and mutated datagrams never crash the parsers; they are refused with an error.
    @Test("fuzzed datagrams are refused, never crash")
    func fuzz() throws {
        var (client, server) = try sessions()
        let serverKey = Curve25519.KeyAgreement.PrivateKey()
        let valid = try HandshakeInitiator(staticKey: Curve25519.KeyAgreement.PrivateKey(), responderPublicKey: serverKey.publicKey, senderIndex: 1).initiation
        let transport = try client.seal(Array(repeating: 1, count: 100))
        var generator = SystemRandomNumberGenerator()
        var refused = 0
        for round in 0..<3000 {
            var datagram = round % 2 == 0 ? valid : transport
            if round % 5 == 0 {
                datagram = (0..<Int.random(in: 0..<300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &generator) where !datagram.isEmpty {
                    datagram[Int.random(in: 0..<datagram.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
                }
                if Bool.random(using: &generator) { datagram = Array(datagram.prefix(Int.random(in: 0...datagram.count, using: &generator))) }
            }
            _ = MessageType.of(datagram)
            do { _ = try HandshakeResponder.consume(datagram, staticKey: serverKey) } catch { refused += 1 }
            do { _ = try server.open(datagram) } catch { refused += 1 }
        }
        #expect(refused >= 5900)
    }
}

/// The protocol error a body throws, or nil if it succeeds (usable with mutating calls).
func refusal<T>(_ body: () throws -> T) -> TunnelProtocolError? {
    do {
        _ = try body()
        return nil
    } catch let error as TunnelProtocolError {
        return error
    } catch {
        return .badPayload("unexpected error \(error)")
    }
}
