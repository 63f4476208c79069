import Foundation
import FlowInspection
import NetExtCore
import NetExtTestSupport
import Testing

/// Packets and first bytes as the content filter reads them.
@Suite("Content filter: packets, TLS server names, HTTP requests")
struct FilterParsingTests {
    static func clientHello() throws -> [UInt8] {
        let text = try String(contentsOf: Fixtures.directory.appendingPathComponent("tls/clienthello-openssl3.hex"), encoding: .utf8)
        return hexBytes(text)
    }

    static func hexBytes(_ text: String) -> [UInt8] {
        let digits = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    /// An IPv4/TCP packet from 198.51.100.2:40000 to 203.0.113.2:443 with `payload`.
    static func tcp4(flags: UInt8 = 0x18, payload: [UInt8] = [], sequence: UInt32 = 1000) -> [UInt8] {
        let total = 20 + 20 + payload.count
        var packet: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 6, 0, 0, 198, 51, 100, 2, 203, 0, 113, 2]
        packet += [0x9c, 0x40, 0x01, 0xbb]
        packet += withUnsafeBytes(of: sequence.bigEndian, Array.init) + [0, 0, 0, 1, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]
        return packet + payload
    }

    /// An IPv4 UDP packet from 198.51.100.2:40000 to 203.0.113.2:7.
    static func udp4(payload: [UInt8]) -> [UInt8] {
        let total = 20 + 8 + payload.count
        var packet: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 0, 0x40, 0, 64, 17, 0, 0, 198, 51, 100, 2, 203, 0, 113, 2]
        packet += [0x9c, 0x40, 0, 7, UInt8((8 + payload.count) >> 8), UInt8((8 + payload.count) & 0xff), 0, 0]
        return packet + payload
    }

    /// An IPv6 packet (with a hop-by-hop header first) carrying UDP from port 5353 to 7.
    static func udp6WithHopByHop(payload: [UInt8]) -> [UInt8] {
        let udpLength = 8 + payload.count
        let payloadLength = 8 + udpLength
        var packet: [UInt8] = [0x60, 0, 0, 0, UInt8(payloadLength >> 8), UInt8(payloadLength & 0xff), 0, 64]
        packet += [0x20, 0x01, 0x0d, 0xb8, 0, 1] + Array(repeating: 0, count: 9) + [2]
        packet += [0x20, 0x01, 0x0d, 0xb8, 0, 2] + Array(repeating: 0, count: 9) + [2]
        packet += [17, 0, 1, 4, 0, 0, 0, 0]  // hop-by-hop: next UDP, length 8, PadN
        packet += [0x14, 0xe9, 0, 7, UInt8(udpLength >> 8), UInt8(udpLength & 0xff), 0, 0]
        return packet + payload
    }

    @Test("IPv4 TCP: addresses, ports, flags, sequence and payload")
    func tcpPacket() throws {
        let packet = try #require(FlowPacket(Self.tcp4(flags: 0x02, payload: [1, 2, 3], sequence: 77)))
        #expect(!packet.isIPv6)
        #expect(packet.transport == .tcp)
        #expect(packet.source == [198, 51, 100, 2] && packet.destination == [203, 0, 113, 2])
        #expect(packet.sourcePort == 40000 && packet.destinationPort == 443)
        #expect(packet.tcpFlags == FlowPacket.syn && packet.sequenceNumber == 77)
        #expect(packet.payloadOffset == 40 && packet.payloadLength == 3)
    }

    @Test("IPv6: extension headers are skipped to the transport header")
    func ipv6ExtensionHeaders() throws {
        let packet = try #require(FlowPacket(Self.udp6WithHopByHop(payload: Array("hi".utf8))))
        #expect(packet.isIPv6 && packet.transport == .udp)
        #expect(packet.sourcePort == 5353 && packet.destinationPort == 7)
        #expect(packet.payloadLength == 2)
        #expect(IPPrefix.format(packet.destination) == "2001:db8:2::2")
    }

    @Test("a packet cut short by the queue's copy range keeps what arrived")
    func truncated() throws {
        var bytes = Self.tcp4(payload: Array(repeating: 0x41, count: 100))
        bytes.removeLast(60)  // the IP header still says 140 bytes
        let packet = try #require(FlowPacket(bytes))
        #expect(packet.payloadLength == 40)
    }

    @Test("malformed headers are refused: short, bad lengths, TCP data offset past the end")
    func malformed() {
        #expect(FlowPacket([0x45, 0, 0, 20]) == nil)
        var badHeaderLength = Self.tcp4()
        badHeaderLength[0] = 0x44  // 16-byte IPv4 header
        #expect(FlowPacket(badHeaderLength) == nil)
        var badOffset = Self.tcp4()
        badOffset[32] = 0xf0  // 60-byte TCP header in a 40-byte packet
        #expect(FlowPacket(badOffset) == nil)
        #expect(FlowPacket(Array(repeating: 0x60, count: 39)) == nil)
    }

    @Test("random bytes never crash the packet parser, and what it accepts stays in bounds", arguments: 0..<4)
    func fuzzPackets(seed: Int) {
        var generator = SplitMix64(state: UInt64(seed))
        for _ in 0..<5_000 {
            var bytes = (0..<Int.random(in: 0...120, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if !bytes.isEmpty, Bool.random(using: &generator) { bytes[0] = Bool.random(using: &generator) ? 0x45 : 0x60 }
            if let packet = FlowPacket(bytes) {
                #expect(packet.payloadOffset >= 0 && packet.payloadLength >= 0)
                #expect(packet.payloadOffset + packet.payloadLength <= bytes.count)
            }
        }
    }

    @Test("the server name of a real ClientHello (OpenSSL 3), lowercased")
    func serverName() throws {
        #expect(TLSClientHello.parse(try Self.clientHello()) == .serverName("www.example.test"))
    }

    @Test("a ClientHello split across segments needs more data until it is whole")
    func splitClientHello() throws {
        let hello = try Self.clientHello()
        for cut in [1, 4, 5, 9, 60, hello.count - 1] {
            #expect(TLSClientHello.parse(hello[..<cut]) == .needMoreData, "cut at \(cut)")
        }
        #expect(TLSClientHello.parse(hello) == .serverName("www.example.test"))
    }

    @Test("a ClientHello split across two TLS records is reassembled")
    func twoRecords() throws {
        let hello = try Self.clientHello()
        let body = Array(hello[5...])
        let first = Array(body[..<100]), second = Array(body[100...])
        func record(_ fragment: [UInt8]) -> [UInt8] { [22, 3, 1, UInt8(fragment.count >> 8), UInt8(fragment.count & 0xff)] + fragment }
        #expect(TLSClientHello.parse(record(first) + record(second)) == .serverName("www.example.test"))
    }

    @Test("not TLS: HTTP, SSH banners, other record types")
    func notTLS() throws {
        #expect(TLSClientHello.parse(Array("GET / HTTP/1.1\r\n".utf8)) == .notTLS)
        #expect(TLSClientHello.parse(Array("SSH-2.0-OpenSSH_9.2\r\n".utf8)) == .notTLS)
        var alert = try Self.clientHello()
        alert[0] = 21
        #expect(TLSClientHello.parse(alert) == .notTLS)
    }

    @Test("a ClientHello without the server_name extension has no server name")
    func noServerName() {
        // Version, random, empty session id, one suite, null compression, no extensions.
        let body: [UInt8] = [3, 3] + Array(repeating: 7, count: 32) + [0, 0, 2, 0x13, 0x01, 1, 0]
        let handshake: [UInt8] = [1, 0, 0, UInt8(body.count)] + body
        let record: [UInt8] = [22, 3, 1, 0, UInt8(handshake.count)] + handshake
        #expect(TLSClientHello.parse(record) == .noServerName)
    }

    @Test("random and mutated ClientHellos never crash the parser", arguments: 0..<4)
    func fuzzClientHello(seed: Int) throws {
        var generator = SplitMix64(state: UInt64(seed) &+ 100)
        let hello = try Self.clientHello()
        for _ in 0..<3_000 {
            var bytes = hello
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            switch TLSClientHello.parse(bytes) {
            case .serverName(let name): #expect(HostName.normalized(name) == name)
            default: break
            }
        }
    }

    @Test("an HTTP request's method, target, Host and URL")
    func httpRequest() {
        let text = "GET /a/b?c=1 HTTP/1.1\r\nUser-Agent: t\r\nhOsT:  School.Test:8080 \r\n\r\n"
        guard case .request(let head) = HTTPRequestHead.parse(Array(text.utf8)) else {
            Issue.record("not parsed")
            return
        }
        #expect(head.method == "GET" && head.target == "/a/b?c=1")
        #expect(head.host == "school.test" && head.port == 8080)
        #expect(head.url == "http://school.test:8080/a/b?c=1")
    }

    @Test("HTTP: incomplete heads wait, other protocols are not HTTP, absolute targets are kept")
    func httpEdges() {
        #expect(HTTPRequestHead.parse(Array("GET /x HTTP/1.1\r\nHost: a".utf8)) == .needMoreData)
        #expect(HTTPRequestHead.parse(Array("GE".utf8)) == .needMoreData)
        #expect(HTTPRequestHead.parse([0x16, 3, 1, 0, 5]) == .notHTTP)
        #expect(HTTPRequestHead.parse(Array("GET /x FTP/1.0\r\n\r\n".utf8)) == .notHTTP)
        guard case .request(let proxied) = HTTPRequestHead.parse(Array("GET http://a.test/p HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8)) else {
            Issue.record("not parsed")
            return
        }
        #expect(proxied.url == "http://a.test/p")
    }

    @Test("random bytes never crash the HTTP parser", arguments: 0..<4)
    func fuzzHTTP(seed: Int) {
        var generator = SplitMix64(state: UInt64(seed) &+ 200)
        let alphabet = Array("GET /:Host\r\n HTTP/1.1 abc.".utf8) + [0, 0xff]
        for _ in 0..<3_000 {
            let bytes = (0..<Int.random(in: 0...200, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            if case .request(let head) = HTTPRequestHead.parse(bytes), let host = head.host {
                #expect(HostName.normalized(host) == host)
            }
        }
    }

    @Test("host names: normalized; subdomains on label boundaries only")
    func hostNames() {
        #expect(HostName.normalized("WWW.Example.TEST.") == "www.example.test")
        #expect(HostName.normalized("exa mple.test") == nil)
        #expect(HostName.normalized("") == nil)
        #expect(HostName.host("a.example.test", isWithin: "example.test"))
        #expect(HostName.host("example.test", isWithin: "example.test"))
        #expect(!HostName.host("badexample.test", isWithin: "example.test"))
    }
}
