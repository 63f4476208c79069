import FlowInspection
import NetExtCore
import NetExtTestSupport
import Testing
@testable import QUICInitial

/// QUIC Initial packets read for their ClientHello's server name, against RFC 9001 Appendix A.
@Suite("QUIC Initial: keys, header protection, CRYPTO frames, server name")
struct QUICInitialTests {
    static func vector() throws -> [String: Any] { try RFCVectors.file("rfc9001-quic-client-initial.json") }

    @Test("RFC 9001 A.1: the client's Initial key, IV and header-protection key from the connection ID")
    func keys() throws {
        let vector = try Self.vector()
        let keys = QUICInitialReader.clientKeys(destinationConnectionID: try RFCVectors.hex(vector["dcid"]))
        #expect(keys.key.withUnsafeBytes { Array($0) } == (try RFCVectors.hex(vector["client_key"])))
        #expect(keys.iv == (try RFCVectors.hex(vector["client_iv"])))
        #expect(keys.headerProtection.withUnsafeBytes { Array($0) } == (try RFCVectors.hex(vector["client_hp"])))
    }

    @Test("RFC 9001 A.2: the protected packet opens; its CRYPTO frame holds a ClientHello naming example.com")
    func serverName() throws {
        let vector = try Self.vector()
        let packet = try RFCVectors.hex(vector["packet"])
        let frames = try #require(QUICInitialReader.cryptoFrames(in: packet))
        var stream = QUICCryptoStream()
        stream.add(frames)
        #expect(TLSClientHello.parse(handshake: stream.prefix) == .serverName(vector["server_name"] as? String ?? "?"))
    }

    @Test("frames out of order and split across datagrams are put back in order")
    func reassembly() throws {
        let packet = try RFCVectors.hex(try Self.vector()["packet"])
        let hello = try #require(QUICInitialReader.cryptoFrames(in: packet)).flatMap(\.data)
        var stream = QUICCryptoStream()
        stream.add([QUICCryptoStream.Frame(offset: 100, data: Array(hello[100...]))])
        #expect(TLSClientHello.parse(handshake: stream.prefix) == .needMoreData)
        stream.add([QUICCryptoStream.Frame(offset: 0, data: Array(hello[..<60])), QUICCryptoStream.Frame(offset: 50, data: Array(hello[50..<120]))])
        #expect(stream.prefix == hello)
        #expect(TLSClientHello.parse(handshake: stream.prefix) == .serverName("example.com"))
        #expect(stream.datagrams == 2)
    }

    @Test("a changed byte anywhere, another version or a short header: not opened, no crash")
    func refused() throws {
        let packet = try RFCVectors.hex(try Self.vector()["packet"])
        for index in stride(from: 0, to: packet.count, by: 37) {
            var changed = packet
            changed[index] ^= 0x01
            #expect(QUICInitialReader.cryptoFrames(in: changed) == nil, "byte \(index) changed")
        }
        var otherVersion = packet
        otherVersion[4] = 2
        #expect(QUICInitialReader.cryptoFrames(in: otherVersion) == nil)
        #expect(QUICInitialReader.cryptoFrames(in: [0x40] + Array(packet[1...])) == nil)
        #expect(QUICInitialReader.cryptoFrames(in: []) == nil)
        for cut in stride(from: 0, to: packet.count, by: 29) {
            #expect(QUICInitialReader.cryptoFrames(in: Array(packet[..<cut])) == nil)
        }
    }

    @Test("property: random payloads never crash the frame reader", arguments: 0..<4)
    func frameFuzz(seed: Int) {
        var random = SplitMix64(state: UInt64(seed) &* 0x9e37_79b9_7f4a_7c15 &+ 11)
        func next() -> UInt64 { random.next() }
        let kinds: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x06, 0x1c, 0x40, 0x80, 0xc0, 0x3f]
        for _ in 0..<4_000 {
            let count = Int(next() % 64)
            let payload = (0..<count).map { _ in next() % 3 == 0 ? kinds[Int(next() % UInt64(kinds.count))] : UInt8(truncatingIfNeeded: next()) }
            if let frames = QUICInitialReader.cryptoFrames(inPayload: payload) {
                #expect(frames.allSatisfy { $0.data.count <= payload.count })
            }
        }
    }

    @Test("the flow tracker judges an outbound UDP flow to port 443 by its Initial's server name")
    func trackerReadsQUIC() throws {
        let datagram = try RFCVectors.hex(try Self.vector()["packet"])
        let total = 28 + datagram.count
        var packet: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 17, 0, 0, 198, 51, 100, 2, 203, 0, 113, 2]
        packet += [0xc3, 0x50, 0x01, 0xbb, UInt8((8 + datagram.count) >> 8), UInt8((8 + datagram.count) & 0xff), 0, 0] + datagram
        var tracker = FlowTracker()
        tracker.quicInitialFrames = { QUICInitialReader.cryptoFrames(in: $0) }
        let parsed = try #require(FlowPacket(packet))
        let decision = packet.withUnsafeBytes { tracker.classify(parsed, bytes: $0, isOutbound: true, owner: nil, now: .now) }
        guard case .ask(let flow) = decision else {
            Issue.record("not asked: \(decision)")
            return
        }
        #expect(flow.remoteHostname == "example.com" && flow.transport == .udp && flow.remotePort == 443)
    }
}
