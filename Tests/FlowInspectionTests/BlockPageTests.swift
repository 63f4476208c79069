import Foundation
import FlowInspection
import NetExtCore
import Testing

@Suite("Content filter: block page and injected segments")
struct BlockPageTests {
    @Test("every inserted text is escaped; the link appears only for http, https or mailto")
    func escaping() {
        let page = BlockPage(organization: "A<b>&\"c'", blockedURL: "http://x.test/<script>", requestAccessText: "<i>ask</i>", requestAccessURL: "https://h.test/?a=1&b=2")
        #expect(page.html.contains("A&lt;b&gt;&amp;&quot;c&#39; does not allow this page."))
        #expect(page.html.contains("http://x.test/&lt;script&gt;"))
        #expect(page.html.contains("href=\"https://h.test/?a=1&amp;b=2\">&lt;i&gt;ask&lt;/i&gt;</a>"))
        #expect(!page.html.contains("<script>"))
        let unsafeLink = BlockPage(organization: nil, blockedURL: "http://x.test/", requestAccessURL: "javascript:alert(1)")
        #expect(unsafeLink.requestAccess == nil && !unsafeLink.html.contains("request-access"))
        #expect(unsafeLink.html.contains("this device's content filter does not allow this page."))
    }

    @Test("the HTTP response is a 403 with the exact content length")
    func response() throws {
        let page = BlockPage(organization: "School", blockedURL: "http://x.test/")
        let bytes = page.httpResponse
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        let parts = text.components(separatedBy: "\r\n\r\n")
        let length = try #require(parts[0].split(separator: "\r\n").first { $0.hasPrefix("Content-Length: ") }?.dropFirst(16))
        #expect(Int(length) == parts.dropFirst().joined(separator: "\r\n\r\n").utf8.count)
    }

    /// Verifies an IPv4/IPv6 TCP packet's checksums the slow way.
    func checksumsValid(_ packet: [UInt8]) -> Bool {
        packet.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!
            let isIPv6 = packet[0] >> 4 == 6
            let headerLength = isIPv6 ? 40 : 20
            if !isIPv6, InternetChecksum.fold(InternetChecksum.sum(base, count: 20)) != 0xffff { return false }
            let tcpLength = packet.count - headerLength
            var sum = InternetChecksum.pseudoHeaderSum(addresses: base + (isIPv6 ? 8 : 12), addressBytes: isIPv6 ? 32 : 8, protocolNumber: 6, length: tcpLength)
            sum = InternetChecksum.sum(base + headerLength, count: tcpLength, initial: sum)
            return InternetChecksum.fold(sum) == 0xffff
        }
    }

    @Test("the response continues the server's sequence, acknowledges the request, ends with FIN; the reset hits the server's next sequence", arguments: [false, true])
    func segments(ipv6: Bool) throws {
        let request: FlowPacket
        if ipv6 {
            var bytes = FilterParsingTests.udp6WithHopByHop(payload: [])
            bytes = Array(bytes[0..<40])
            bytes[6] = 6
            let tcp: [UInt8] = [0x9c, 0x40, 0, 80, 0, 0, 0x03, 0xe8, 0, 0, 0x13, 0x88, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0] + Array(repeating: 0x41, count: 100)
            bytes[4] = 0
            bytes[5] = UInt8(tcp.count)
            request = try #require(FlowPacket(bytes + tcp))
        } else {
            request = try #require(FlowPacket(FilterParsingTests.tcp4(payload: Array(repeating: 0x41, count: 100), sequence: 1000)))
        }
        let payload = Array(repeating: UInt8(ascii: "x"), count: 3_000)
        let segments = TCPSegmentBuilder.response(to: request, payload: payload)
        #expect(segments.count == 3)
        var delivered = 0
        for (index, segment) in segments.enumerated() {
            let parsed = try #require(FlowPacket(segment))
            #expect(checksumsValid(segment))
            #expect(parsed.source == request.destination && parsed.destination == request.source)
            #expect(parsed.sourcePort == request.destinationPort && parsed.destinationPort == request.sourcePort)
            #expect(parsed.sequenceNumber == request.acknowledgementNumber &+ UInt32(delivered))
            #expect(parsed.acknowledgementNumber == request.sequenceNumber &+ 100)
            #expect((parsed.tcpFlags & FlowPacket.fin != 0) == (index == segments.count - 1))
            #expect(parsed.payloadLength <= TCPSegmentBuilder.maximumPayload)
            delivered += parsed.payloadLength
        }
        #expect(delivered == payload.count)
        let reset = TCPSegmentBuilder.resetToServer(for: request)
        let parsedReset = try #require(FlowPacket(reset))
        #expect(checksumsValid(reset))
        #expect(parsedReset.tcpFlags == FlowPacket.rst && parsedReset.sequenceNumber == request.sequenceNumber)
        #expect(parsedReset.destination == request.destination && parsedReset.destinationPort == request.destinationPort)
    }
}
