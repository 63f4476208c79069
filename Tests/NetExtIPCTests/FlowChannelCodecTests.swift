import Foundation
import NetExtCore
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

    @Test("verdicts round-trip", arguments: [FilterVerdict.allow, .drop, .needRules])
    func verdictRoundTrip(verdict: FilterVerdict) throws {
        let bytes = FlowChannelCodec.encodeVerdict(flowID: 0x0102_0304_0506_0708, verdict)
        #expect(bytes == [2, 1, 2, 3, 4, 5, 6, 7, 8, UInt8([FilterVerdict.allow, .drop, .needRules].firstIndex(of: verdict)!)])
        let decoded = try bytes.withUnsafeBytes { try FlowChannelCodec.decodeVerdict($0) }
        #expect(decoded.flowID == 0x0102_0304_0506_0708 && decoded.verdict == verdict)
    }

    @Test("every truncation of a flow is refused with the offset")
    func truncation() {
        let bytes = FlowChannelCodec.encode(Self.flows[0])
        for cut in 0..<bytes.count {
            #expect(throws: FlowChannelCodec.DecodeError.self) { try Array(bytes[..<cut]).withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
        }
        #expect(throws: FlowChannelCodec.DecodeError.self) { try (bytes + [0]).withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
    }

    @Test("bad fields are named: tag, address length, verdict, UTF-8")
    func badFields() throws {
        var bytes = FlowChannelCodec.encode(Self.flows[0])
        bytes[0] = 9
        #expect(throws: FlowChannelCodec.DecodeError.invalid("not a flow message", at: 0)) { try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
        bytes = FlowChannelCodec.encode(Self.flows[0])
        bytes[15] = 5  // local address length
        #expect(throws: FlowChannelCodec.DecodeError.invalid("address length 5", at: 15)) { try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
        #expect(throws: FlowChannelCodec.DecodeError.self) { try [UInt8]([2, 0, 0, 0, 0, 0, 0, 0, 1, 9]).withUnsafeBytes { try FlowChannelCodec.decodeVerdict($0) } }
        bytes = FlowChannelCodec.encode(Self.flows[3])
        let hostStart = bytes.count - 2 - Array("http://school.test/ünï/?q=1".utf8).count - Array("école.test".utf8).count
        bytes[hostStart] = 0xff
        #expect(throws: FlowChannelCodec.DecodeError.self) { try bytes.withUnsafeBytes { try FlowChannelCodec.decodeFlow($0) } }
    }

    @Test("random and mutated messages never crash the decoders", arguments: 0..<4)
    func fuzz(seed: Int) {
        var generator = SeededRandom(state: UInt64(seed) &+ 77)
        let valid = Self.flows.map(FlowChannelCodec.encode)
        for round in 0..<4_000 {
            var bytes = valid[round % valid.count]
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            if let flow = try? bytes.withUnsafeBytes({ try FlowChannelCodec.decodeFlow($0) }) {
                #expect(FlowChannelCodec.encode(flow) == bytes, "what decodes re-encodes to the same bytes")
            }
            _ = try? bytes.withUnsafeBytes { try FlowChannelCodec.decodeVerdict($0) }
        }
    }
}

/// SplitMix64, so fuzz failures repeat.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
