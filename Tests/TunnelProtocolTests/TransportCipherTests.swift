import Crypto
import Foundation
import Testing
@testable import TunnelProtocol

@Suite("In-place transport cipher")
struct TransportCipherTests {
    /// The message swift-crypto's ChaChaPoly produces for the same key, counter and packet.
    func reference(_ packet: [UInt8], key: SymmetricKey, receiver: UInt32, counter: UInt64) throws -> [UInt8] {
        let padded = packet + [UInt8](repeating: 0, count: TransportCipher.paddedLength(packet.count) - packet.count)
        var nonce = [UInt8](repeating: 0, count: 4)
        for shift in stride(from: 0, to: 64, by: 8) { nonce.append(UInt8(truncatingIfNeeded: counter >> UInt64(shift))) }
        let box = try ChaChaPoly.seal(padded, using: key, nonce: ChaChaPoly.Nonce(data: nonce))
        var message: [UInt8] = [4, 0, 0, 0]
        message.appendBigEndian(receiver)
        message.appendBigEndian(counter)
        return message + box.ciphertext + box.tag
    }

    @Test("sealing in place gives exactly swift-crypto's ChaCha20-Poly1305 message, and opens back")
    func matchesSwiftCrypto() throws {
        for length in [0, 1, 15, 16, 17, 63, 64, 500, 1379, 1420, 1500] {
            let key = SymmetricKey(size: .bits256)
            let cipher = try #require(TransportCipher(key))
            let packet = (0..<length).map { _ in UInt8.random(in: 0...255) }
            let counter = UInt64.random(in: 0...UInt64.max / 2)
            let receiver = UInt32.random(in: 1...UInt32.max)
            var buffer = [UInt8](repeating: 0xee, count: TransportCipher.messageLength(packetLength: length) + 8)
            let written = buffer.withUnsafeMutableBytes { bytes in
                bytes.baseAddress!.advanced(by: WireSize.transportHeader).copyMemory(from: packet, byteCount: length)
                return cipher.seal(packetLength: length, in: bytes, receiverIndex: receiver, counter: counter)
            }
            let message = Array(buffer[..<written])
            #expect(message == (try reference(packet, key: key, receiver: receiver, counter: counter)), "length \(length)")

            var opened = message
            let plaintext = opened.withUnsafeMutableBytes { cipher.open($0, counter: counter) }
            #expect(plaintext == TransportCipher.paddedLength(length))
            #expect(Array(opened[WireSize.transportHeader..<(WireSize.transportHeader + length)]) == packet)

            var tampered = message
            tampered[WireSize.transportHeader] ^= 1
            let tamperedResult = tampered.withUnsafeMutableBytes { cipher.open($0, counter: counter) }
            #expect(tamperedResult == nil)
            var wrongCounter = message
            let wrongCounterResult = wrongCounter.withUnsafeMutableBytes { cipher.open($0, counter: counter &+ 1) }
            #expect(wrongCounterResult == nil)
        }
    }

    @Test("batch counters: reserved ranges never overlap and the replay window takes each once")
    func reservedCounters() throws {
        var (clientSide, serverSession) = try TransportTests().sessions()
        let first = try clientSide.reserveCounters(40)
        let second = try clientSide.reserveCounters(3)
        #expect(first == 0)
        #expect(second == 40)
        #expect(clientSide.sendCounter == 43)
        let fresh = serverSession.acceptCounter(41)
        let older = serverSession.acceptCounter(2)
        let again = serverSession.acceptCounter(41)
        #expect(fresh)
        #expect(older)
        #expect(!again)
    }
}
