import Foundation
import NetExtCore
import Testing
@testable import NetExtIPC

@Suite("App proxy flow channel: offers and answers")
struct AppProxyFlowCodecTests {
    static let offers: [AppProxyFlowOffer] = [
        AppProxyFlowOffer(
            id: 1, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "192.0.2.7", port: 443), localEndpoint: NetworkEndpoint(hostname: "198.51.100.2", port: 40000),
            remoteHostname: "www.site.test", sourceAppIdentifier: "org.example.Browser", processIdentifier: 4242, executablePath: "/usr/bin/curl"),
        AppProxyFlowOffer(
            id: .max, transport: .udp, remoteEndpoint: NetworkEndpoint(hostname: "2001:db8::7", port: 53), localEndpoint: NetworkEndpoint(hostname: "2001:db8:1::2", port: 5353),
            sourceAppIdentifier: "", initialDatagram: Array("query".utf8)),
        AppProxyFlowOffer(
            id: 3, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "203.0.113.7", port: 51000), localEndpoint: NetworkEndpoint(hostname: "198.51.100.2", port: 9090),
            sourceAppIdentifier: "", direction: .inbound),
    ]

    @Test("offers and answers survive encoding")
    func roundTrip() throws {
        for offer in Self.offers {
            let bytes = AppProxyFlowCodec.encode(offer)
            #expect(try bytes.withUnsafeBytes { try AppProxyFlowCodec.decodeOffer($0) } == offer)
        }
        for answer in [AppProxyFlowCodec.Answer(flowID: 9, handled: true), AppProxyFlowCodec.Answer(flowID: 0, handled: false)] {
            #expect(try AppProxyFlowCodec.encode(answer).withUnsafeBytes { try AppProxyFlowCodec.decodeAnswer($0) } == answer)
            #expect(try AppProxyFlowCodec.encode(answer).withUnsafeBytes { try AppProxyFlowCodec.decodeProviderMessage($0) } == .answer(answer))
        }
        let ended = AppProxyFlowCodec.encodeEnded(flowID: 0x0102_0304_0506_0708)
        #expect(ended == [0x13, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try ended.withUnsafeBytes { try AppProxyFlowCodec.decodeProviderMessage($0) } == .ended(flowID: 0x0102_0304_0506_0708))
    }

    @Test("an inbound flow is TCP: an offer of an inbound UDP flow is refused at its transport byte")
    func inboundUDPRefused() {
        var bytes = AppProxyFlowCodec.encode(Self.offers[1])
        bytes[9] |= 0x80
        do {
            _ = try bytes.withUnsafeBytes { try AppProxyFlowCodec.decodeOffer($0) }
            Issue.record("an inbound UDP offer was accepted")
        } catch { #expect("\(error)".contains("inbound UDP") && "\(error)".contains("byte 9")) }
    }

    @Test("an end notice cut short or with a byte more is refused with its offset")
    func endedTruncations() {
        let bytes = AppProxyFlowCodec.encodeEnded(flowID: 7)
        for length in 1..<bytes.count {
            #expect(throws: FlowChannelCodec.DecodeError.self) { try Array(bytes[..<length]).withUnsafeBytes { try AppProxyFlowCodec.decodeProviderMessage($0) } }
        }
        do {
            _ = try (bytes + [0]).withUnsafeBytes { try AppProxyFlowCodec.decodeProviderMessage($0) }
            Issue.record("a trailing byte was accepted")
        } catch { #expect("\(error)".contains("at byte 9")) }
    }

    @Test("every truncation and trailing byte is refused with its offset")
    func truncations() {
        let bytes = AppProxyFlowCodec.encode(Self.offers[0])
        for length in 0..<bytes.count {
            #expect(throws: FlowChannelCodec.DecodeError.self) { try Array(bytes[..<length]).withUnsafeBytes { try AppProxyFlowCodec.decodeOffer($0) } }
        }
        do {
            _ = try (bytes + [0]).withUnsafeBytes { try AppProxyFlowCodec.decodeOffer($0) }
            Issue.record("a trailing byte was accepted")
        } catch { #expect("\(error)" == "flow message: 1 bytes after the end at byte \(bytes.count)") }
        #expect(throws: FlowChannelCodec.DecodeError.self) { try [0x12, 0, 0, 0, 0, 0, 0, 0, 1, 2].withUnsafeBytes { try AppProxyFlowCodec.decodeAnswer($0) } }
    }

    @Test("random and mutated messages are decoded or refused, never trapped on (fuzz)")
    func fuzz() {
        var generator = SystemRandomNumberGenerator()
        let valid = AppProxyFlowCodec.encode(Self.offers[0])
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if !bytes.isEmpty { bytes[0] = [AppProxyFlowCodec.offerTag, AppProxyFlowCodec.answerTag, AppProxyFlowCodec.endedTag][round % 3] }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...4, using: &generator) { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            }
            _ = try? bytes.withUnsafeBytes { try AppProxyFlowCodec.decodeOffer($0) }
            _ = try? bytes.withUnsafeBytes { try AppProxyFlowCodec.decodeAnswer($0) }
            _ = try? bytes.withUnsafeBytes { try AppProxyFlowCodec.decodeProviderMessage($0) }
        }
    }
}
