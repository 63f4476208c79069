import Foundation
import NetExtCore
import NetExtTestSupport
import Testing
@testable import NetExtIPC

@Suite("Filter flow channel: binary flows and verdicts")
struct FlowChannelCodecTests {
    static let flows: [FilterFlow] = [
        FilterFlow(id: 1, direction: .outbound, transport: .tcp, localAddress: "198.51.100.2", localPort: 40000, remoteAddress: "203.0.113.2",
                   remotePort: 443, remoteHostname: "www.example.test", url: nil, sourceApplication: SourceApplication(uid: 1000, gid: 100)),
        FilterFlow(id: UInt64.max, direction: .inbound, transport: .udp, localAddress: "2001:db8:1::2", localPort: 7, remoteAddress: "fe80::1",
                   remotePort: 5353, remoteHostname: nil, url: nil, sourceApplication: nil),
        FilterFlow(id: 42, direction: .outbound, transport: .icmpv6, localAddress: "::1", localPort: 0, remoteAddress: "::", remotePort: 0),
        FilterFlow(id: 7, direction: .outbound, transport: .tcp, localAddress: "10.0.0.1", localPort: 1, remoteAddress: "10.0.0.2", remotePort: 80,
                   remoteHostname: "école.test", url: "http://school.test/ünï/?q=1", sourceApplication: SourceApplication(uid: 0, gid: 0)),
        FilterFlow(id: 8, direction: .outbound, transport: .udp, localAddress: "10.0.0.1", localPort: 53000, remoteAddress: "10.0.0.2", remotePort: 53,
                   sourceApplication: SourceApplication(uid: 1000, gid: 1000, pid: 4242, executable: "/usr/bin/curl", cgroup: "/user.slice/session-1.scope")),
    ]

    @Test("texts longer than the limit are cut at a character boundary and stay UTF-8")
    func longText() throws {
        let flow = FilterFlow(id: 9, direction: .outbound, transport: .tcp, localAddress: "10.0.0.1", localPort: 1, remoteAddress: "10.0.0.2",
                              remotePort: 80, url: "http://x.test/" + String(repeating: "é", count: 3_000))
        let decoded = try FlowChannelCodec.encode(flow).withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) }
        #expect(decoded.url.map { $0.utf8.count <= FlowChannelCodec.maximumText && $0.hasPrefix("http://x.test/éé") } == true)
    }

    @Test("flows round-trip", arguments: flows)
    func flowRoundTrip(flow: FilterFlow) throws {
        let bytes = FlowChannelCodec.encode(flow)
        #expect(try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } == flow)
    }

    static let answers: [FlowChannelCodec.FromProvider] = [
        .verdict(flowID: 0x0102_0304_0506_0708, .allow), .verdict(flowID: 1, .drop), .verdict(flowID: 2, .needRules),
        .verdict(flowID: 3, .filterData(peekInboundBytes: 4_096, peekOutboundBytes: nil)),
        .verdict(flowID: 4, .filterData(peekInboundBytes: nil, peekOutboundBytes: 0)),
        .dataVerdict(flowID: 5, side: .inbound, .allow), .dataVerdict(flowID: 6, side: .outbound, .drop),
        .dataVerdict(flowID: 7, side: .inbound, .data(passBytes: 1_500, peekBytes: 65_536)),
        .dataVerdict(flowID: 8, side: .outbound, .data(passBytes: FlowDataFilter.passAll, peekBytes: 0)),
        .dataVerdict(flowID: 9, side: .inbound, .remediate(FilterRemediation())),
        .dataVerdict(flowID: 10, side: .inbound, .remediate(FilterRemediation(requestAccessText: "Ask Ms Dupré", requestAccessURL: "mailto:it@school.test"))),
    ]

    static let questions: [FlowChannelCodec.ToProvider] = [
        .data(flowID: 11, side: .outbound, offset: 0, bytes: Array("GET / HTTP/1.1\r\n".utf8)),
        .data(flowID: 12, side: .inbound, offset: 70_000, bytes: []),
        .data(flowID: 13, side: .inbound, offset: 1, bytes: [UInt8](repeating: 0xab, count: FlowDataFilter.maximumPeek)),
        .complete(flowID: 14, side: .outbound), .complete(flowID: 15, side: .inbound),
    ]

    @Test("the provider's answers round-trip", arguments: answers)
    func answerRoundTrip(answer: FlowChannelCodec.FromProvider) throws {
        let bytes = FlowChannelCodec.encode(answer)
        #expect(try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFromProvider($0) } == answer)
        for cut in 0..<bytes.count {
            #expect(throws: FlowChannelCodec.DecodeError.self) { try Array(bytes[..<cut]).withUnsafeBytes { try FlowChannelCodec.decodeFromProvider($0) } }
        }
        #expect(throws: FlowChannelCodec.DecodeError.self) { try (bytes + [0]).withUnsafeBytes { try FlowChannelCodec.decodeFromProvider($0) } }
    }

    @Test("a new-flow verdict keeps its documented layout")
    func verdictLayout() {
        #expect(FlowChannelCodec.encode(.verdict(flowID: 0x0102_0304_0506_0708, .needRules)) == [2, 1, 2, 3, 4, 5, 6, 7, 8, 2])
        #expect(FlowChannelCodec.encode(.verdict(flowID: 1, .filterData(peekInboundBytes: 256, peekOutboundBytes: nil)))
            == [2, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0])
        // Windows beyond the maximum are cut to it rather than read as "unfiltered".
        #expect(FlowChannelCodec.encode(.verdict(flowID: 1, .filterData(peekInboundBytes: Int.max, peekOutboundBytes: nil)))
            == FlowChannelCodec.encode(.verdict(flowID: 1, .filterData(peekInboundBytes: FlowDataFilter.maximumPeek, peekOutboundBytes: nil))))
    }

    @Test("data and completions round-trip; truncated headers are refused", arguments: questions)
    func questionRoundTrip(question: FlowChannelCodec.ToProvider) throws {
        let bytes = FlowChannelCodec.encode(question)
        #expect(try bytes.withUnsafeBytes { try FlowChannelCodec.decodeToProvider($0) } == question)
        let header = if case .complete = question { bytes.count } else { 18 }
        for cut in 0..<header {
            #expect(throws: FlowChannelCodec.DecodeError.self) { try Array(bytes[..<cut]).withUnsafeBytes { try FlowChannelCodec.decodeToProvider($0) } }
        }
    }

    @Test("out-of-range fields in answers are named")
    func badAnswers() {
        #expect(throws: FlowChannelCodec.DecodeError.invalid("verdict 9", at: 9)) {
            try [UInt8]([2, 0, 0, 0, 0, 0, 0, 0, 1, 9]).withUnsafeBytes { try FlowChannelCodec.decodeFromProvider($0) }
        }
        #expect(throws: FlowChannelCodec.DecodeError.invalid("side 2", at: 9)) {
            try [UInt8]([5, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0]).withUnsafeBytes { try FlowChannelCodec.decodeFromProvider($0) }
        }
        #expect(throws: FlowChannelCodec.DecodeError.invalid("peek window 65537", at: 19)) {
            try [UInt8]([5, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]).withUnsafeBytes { try FlowChannelCodec.decodeFromProvider($0) }
        }
        #expect(throws: FlowChannelCodec.DecodeError.invalid("message type 7", at: 0)) {
            try [UInt8]([7]).withUnsafeBytes { try FlowChannelCodec.decodeToProvider($0) }
        }
    }

    @Test("every truncation of a flow is refused with the offset")
    func truncation() {
        let bytes = FlowChannelCodec.encode(Self.flows[0])
        for cut in 0..<bytes.count {
            #expect(throws: FlowChannelCodec.DecodeError.self) { try Array(bytes[..<cut]).withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
        }
        #expect(throws: FlowChannelCodec.DecodeError.self) { try (bytes + [0]).withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
    }

    @Test("bad fields are named: tag, address length, UTF-8")
    func badFields() throws {
        var bytes = FlowChannelCodec.encode(Self.flows[0])
        bytes[0] = 9
        #expect(throws: FlowChannelCodec.DecodeError.invalid("not a flow message", at: 0)) { try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
        bytes = FlowChannelCodec.encode(Self.flows[0])
        bytes[15] = 5  // local address length
        #expect(throws: FlowChannelCodec.DecodeError.invalid("address length 5", at: 15)) { try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
        bytes = FlowChannelCodec.encode(Self.flows[3])
        let hostStart = bytes.count - 2 - Array("http://school.test/ünï/?q=1".utf8).count - Array("école.test".utf8).count
        bytes[hostStart] = 0xff
        #expect(throws: FlowChannelCodec.DecodeError.self) { try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
    }

    @Test("random and mutated messages never crash the decoders", arguments: 0..<4)
    func fuzz(seed: Int) {
        var generator = SplitMix64(state: UInt64(seed) &+ 77)
        let valid = Self.flows.map(FlowChannelCodec.encode) + Self.answers.map(FlowChannelCodec.encode)
            + Self.questions.filter { if case .data(_, _, _, let bytes) = $0 { bytes.count < 100 } else { true } }.map(FlowChannelCodec.encode)
        for round in 0..<4_000 {
            var bytes = valid[round % valid.count]
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            if let flow = try? bytes.withUnsafeBytes({ try FlowChannelCodec.decodeFlow($0) }) {
                #expect(FlowChannelCodec.encode(flow) == bytes, "what decodes re-encodes to the same bytes")
            }
            if let answer = try? bytes.withUnsafeBytes({ try FlowChannelCodec.decodeFromProvider($0) }) {
                #expect(FlowChannelCodec.encode(answer) == bytes, "an answer that decodes re-encodes to the same bytes")
            }
            if let question = try? bytes.withUnsafeBytes({ try FlowChannelCodec.decodeToProvider($0) }) {
                #expect(FlowChannelCodec.encode(question) == bytes, "a question that decodes re-encodes to the same bytes")
            }
        }
    }
}
