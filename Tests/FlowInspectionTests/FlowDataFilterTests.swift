import Foundation
import FlowInspection
import NetExtCore
import NetExtTestSupport
import Testing

/// Peek windows: what a provider reading a flow's data is shown, what is held, what leaves.
@Suite("Content filter: peek windows and data verdicts")
struct FlowDataFilterTests {
    static func receive(
        _ filter: inout FlowDataFilter, _ id: UInt32, _ side: FlowDataFilter.Side = .inbound, sequence: UInt32?, _ bytes: [UInt8], fin: Bool = false
    ) -> FlowDataFilter.PacketAction {
        bytes.withUnsafeBytes { filter.receive(packetID: id, side: side, sequence: sequence, payload: $0, fin: fin) }
    }

    @Test("bytes are shown up to the window, held until passed, and shown again until they are")
    func peekAndPass() {
        var filter = FlowDataFilter(peekOutboundBytes: nil, peekInboundBytes: 8)
        let answer = Array("HTTP/1.1 200 OK\r\n".utf8)
        let got1 = Self.receive(&filter, 1, sequence: 5_000, answer)
        #expect(got1 == .hold)
        let got2 = filter.nextQuestions()
        #expect(got2 == [.data(.inbound, offset: 0, bytes: Array(answer[..<8]))])
        let got3 = filter.nextQuestions()
        #expect(got3.isEmpty, "one question at a time")
        // Nothing passed, a wider window: the same bytes again with the rest behind them.
        let got4 = filter.pass(.inbound, bytes: 0, peek: 64)
        #expect(got4.isEmpty)
        let got5 = filter.nextQuestions()
        #expect(got5 == [.data(.inbound, offset: 0, bytes: answer)])
        // Half passed: the packet still carries unpassed bytes and stays; the rest is shown
        // again when more arrives.
        let got6 = filter.pass(.inbound, bytes: 10, peek: 64)
        #expect(got6.isEmpty)
        let got7 = filter.nextQuestions()
        #expect(got7.isEmpty, "nothing new to show")
        let got8 = Self.receive(&filter, 2, sequence: 5_017, Array("body".utf8))
        #expect(got8 == .hold)
        let got9 = filter.nextQuestions()
        #expect(got9 == [.data(.inbound, offset: 10, bytes: Array(answer[10...]) + Array("body".utf8))])
        let got10 = filter.pass(.inbound, bytes: 7, peek: 64)
        #expect(got10 == [1])
        #expect(filter.passedBytes(.inbound) == 17)
        // A copy of the first segment passes at once; the second still waits.
        let got11 = Self.receive(&filter, 3, sequence: 5_000, answer)
        #expect(got11 == .accept)
        let got12 = filter.pass(.inbound, bytes: 4, peek: 64)
        #expect(got12 == [2])
        // The unfiltered direction never waits.
        let got13 = Self.receive(&filter, 4, .outbound, sequence: 90, Array("GET /".utf8))
        #expect(got13 == .accept)
    }

    @Test("the sequence number the receiver expects is the end of what reached it: a packet straddling the pass offset has not")
    func expectedSequence() {
        var filter = FlowDataFilter(peekOutboundBytes: nil, peekInboundBytes: 4_000)
        let first = [UInt8](repeating: 0x61, count: 1_000)
        #expect(Self.receive(&filter, 1, sequence: 70_000, first) == .hold)
        #expect(Self.receive(&filter, 2, sequence: 71_000, first) == .hold)
        #expect(filter.nextSequence(.inbound) == 70_000, "nothing reached the program yet")
        // 1,500 bytes passed: packet 1 leaves, packet 2 (1,000..<2,000) stays held.
        let leaving = filter.pass(.inbound, bytes: 1_500, peek: 4_000)
        #expect(leaving == [1])
        #expect(filter.passedBytes(.inbound) == 1_500)
        #expect(filter.nextSequence(.inbound) == 71_000, "a reset must name packet 2's first byte, not the pass offset")
        let rest = filter.pass(.inbound, bytes: 500, peek: 4_000)
        #expect(rest == [2])
        #expect(filter.nextSequence(.inbound) == 72_000)
        // A retransmission of what already arrived changes nothing.
        #expect(Self.receive(&filter, 3, sequence: 70_000, first) == .accept)
        #expect(filter.nextSequence(.inbound) == 72_000)
        #expect(filter.nextSequence(.outbound) == nil, "the outbound side is not filtered")
    }

    @Test("segments out of order wait for the gap; the shown bytes are in stream order")
    func reordering() {
        var filter = FlowDataFilter(peekOutboundBytes: 100, peekInboundBytes: nil, outboundBase: 1_000)
        let got14 = Self.receive(&filter, 2, .outbound, sequence: 1_005, Array("world".utf8))
        #expect(got14 == .hold)
        let got15 = filter.nextQuestions()
        #expect(got15.isEmpty, "nothing from offset 0 yet")
        let got16 = Self.receive(&filter, 1, .outbound, sequence: 1_000, Array("hello".utf8))
        #expect(got16 == .hold)
        let got17 = filter.nextQuestions()
        #expect(got17 == [.data(.outbound, offset: 0, bytes: Array("helloworld".utf8))])
        let got18 = Set(filter.pass(.outbound, bytes: 10, peek: 100))
        #expect(got18 == [1, 2])
    }

    @Test("a closed side is reported complete once everything it sent was shown")
    func completion() {
        var filter = FlowDataFilter(peekOutboundBytes: nil, peekInboundBytes: 100)
        let got19 = Self.receive(&filter, 1, sequence: 0, Array("abc".utf8))
        #expect(got19 == .hold)
        _ = filter.nextQuestions()
        let got20 = Self.receive(&filter, 2, sequence: 3, [], fin: true)
        #expect(got20 == .hold, "the FIN waits behind unpassed data")
        let got21 = Set(filter.pass(.inbound, bytes: 3, peek: 100))
        #expect(got21 == [1, 2])
        let got22 = filter.nextQuestions()
        #expect(got22 == [.complete(.inbound)])
        _ = filter.pass(.inbound, bytes: 0, peek: 0)
        let got23 = filter.nextQuestions()
        #expect(got23.isEmpty, "complete is said once")
    }

    @Test("passing everything on every filtered side means the flow may be allowed; pre-passed bytes leave at once")
    func passAll() {
        var filter = FlowDataFilter(peekOutboundBytes: 10, peekInboundBytes: 10)
        #expect(!filter.passesEverything)
        _ = filter.pass(.outbound, bytes: FlowDataFilter.passAll, peek: 0)
        #expect(!filter.passesEverything)
        _ = filter.pass(.inbound, bytes: 100, peek: 10)
        let got24 = Self.receive(&filter, 1, sequence: 7, Array(repeating: 1, count: 50))
        #expect(got24 == .accept, "within the 100 passed bytes")
        let got25 = Self.receive(&filter, 2, sequence: 57, Array(repeating: 2, count: 50))
        #expect(got25 == .accept)
        let got26 = Self.receive(&filter, 3, sequence: 107, Array(repeating: 3, count: 20))
        #expect(got26 == .hold, "reaches past them")
        let got27 = filter.nextQuestions()
        #expect(got27 == [.data(.inbound, offset: 100, bytes: Array(repeating: 3, count: 10))])
        _ = filter.pass(.inbound, bytes: FlowDataFilter.passAll, peek: 0)
        #expect(filter.passesEverything)
    }

    @Test("datagrams count one after another; the buffer limit drops what does not fit")
    func datagramsAndLimit() {
        var filter = FlowDataFilter(peekOutboundBytes: 4, peekInboundBytes: nil)
        let got28 = Self.receive(&filter, 1, .outbound, sequence: nil, [1, 2, 3])
        #expect(got28 == .hold)
        let got29 = Self.receive(&filter, 2, .outbound, sequence: nil, [4, 5, 6])
        #expect(got29 == .hold)
        let got30 = filter.nextQuestions()
        #expect(got30 == [.data(.outbound, offset: 0, bytes: [1, 2, 3, 4])])
        let got31 = filter.pass(.outbound, bytes: 3, peek: 4)
        #expect(got31 == [1])
        let got32 = filter.nextQuestions()
        #expect(got32 == [.data(.outbound, offset: 3, bytes: [4, 5, 6])])
        var full = FlowDataFilter(peekOutboundBytes: 1, peekInboundBytes: nil)
        let big = [UInt8](repeating: 7, count: FlowDataFilter.bufferLimit / 2 + 1)
        let got33 = Self.receive(&full, 1, .outbound, sequence: nil, big)
        #expect(got33 == .hold)
        let got34 = Self.receive(&full, 2, .outbound, sequence: nil, big)
        #expect(got34 == .drop)
    }

    /// A byte stream cut into segments, delivered shuffled with duplicates, to a provider that
    /// passes a random part of what it is shown: it sees exactly the stream, in order, and every
    /// segment leaves once, only after all its bytes were passed.
    @Test("property: random segmentation, reordering and passing reconstruct the stream", arguments: 0..<24)
    func streamProperty(seed: Int) {
        var random = SplitMix64(state: UInt64(seed) &* 0x9e37_79b9 &+ 1)
        let length = Int.random(in: 1...3_000, using: &random)
        let stream = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
        var cuts = Set((0..<Int.random(in: 0...40, using: &random)).map { _ in Int.random(in: 1..<max(length, 2), using: &random) })
        cuts.insert(length)
        var segments: [(id: UInt32, start: Int, end: Int)] = []
        var previous = 0
        for (index, cut) in cuts.sorted().enumerated() where cut > previous {
            segments.append((UInt32(index + 1), previous, cut))
            previous = cut
        }
        // Arrival order: roughly in order, with local swaps and duplicates.
        var arrivals = segments
        for index in arrivals.indices.dropLast() where Bool.random(using: &random) && Int.random(in: 0..<4, using: &random) == 0 {
            arrivals.swapAt(index, index + 1)
        }
        arrivals += segments.filter { _ in Int.random(in: 0..<6, using: &random) == 0 }
        let base = UInt32.random(in: 0...UInt32.max, using: &random)
        var filter = FlowDataFilter(peekOutboundBytes: nil, peekInboundBytes: Int.random(in: 1...512, using: &random), inboundBase: base)
        var shown: [UInt8] = []
        var passed = 0
        var released: [UInt32] = []
        var accepted: [UInt32] = []
        var rounds = 0
        var completed = false
        func answer() {
            for question in filter.nextQuestions() {
                guard case .data(_, let offset, let bytes) = question else {
                    // The side closed with everything shown: the provider passes the rest.
                    completed = true
                    released += filter.pass(.inbound, bytes: FlowDataFilter.passAll, peek: 0)
                    continue
                }
                #expect(offset == passed)
                #expect(Array(stream[offset..<(offset + bytes.count)]) == bytes, "shown bytes are the stream's")
                if offset + bytes.count > shown.count { shown += bytes[(shown.count - offset)...] }
                let pass = Int.random(in: 0...bytes.count, using: &random)
                passed += pass
                // Each answer looks further than was shown, so the provider is asked again.
                let peek = max(Int.random(in: 1...512, using: &random), shown.count - passed + 1)
                let leaving = filter.pass(.inbound, bytes: pass, peek: peek)
                for id in leaving {
                    let segment = segments.first { $0.id == id }!
                    #expect(segment.end <= passed, "a segment leaves only when all its bytes are passed")
                }
                released += leaving
            }
        }
        for arrival in arrivals {
            let bytes = Array(stream[arrival.start..<arrival.end])
            let action = Self.receive(&filter, arrival.id, sequence: base &+ UInt32(arrival.start), bytes)
            if action == .accept { accepted.append(arrival.id) }
            answer()
        }
        // The sender closes: a FIN after the last byte.
        let finAction = Self.receive(&filter, 10_000, sequence: base &+ UInt32(length), [], fin: true)
        if finAction == .accept { accepted.append(10_000) }
        while !completed, rounds < 10_000 {
            rounds += 1
            answer()
        }
        #expect(shown == stream, "everything was shown, in order")
        #expect(completed)
        #expect(Set(released + accepted) == Set(segments.map(\.id) + [10_000]), "every segment left")
        #expect(filter.heldPackets.isEmpty)
    }

    @Test("tracker: a flow answered filterData is read as data; passing releases; the final verdict hands back what is held")
    func trackerDataPhase() {
        let start = ContinuousClock.now
        var tracker = FlowTracker()
        func classify(_ bytes: [UInt8], outbound: Bool = true, id: UInt32, after: Duration = .zero) -> FlowTracker.Decision {
            let packet = FlowPacket(bytes)!
            return bytes.withUnsafeBytes { tracker.classify(packet, bytes: $0, isOutbound: outbound, owner: nil, packetID: id, now: start + after) }
        }
        _ = classify(FilterParsingTests.tcp4(flags: FlowPacket.syn, sequence: 999), id: 1)
        let request = Array("GET /a HTTP/1.1\r\nHost: school.test\r\n\r\n".utf8)
        guard case .ask(let flow) = classify(FilterParsingTests.tcp4(payload: request, sequence: 1_000), id: 2) else {
            Issue.record("not asked")
            return
        }
        let began = tracker.beginDataFiltering(flowID: flow.id, peekOutboundBytes: 4, peekInboundBytes: nil, now: start)
        let beganAgain = tracker.beginDataFiltering(flowID: flow.id, peekOutboundBytes: 4, peekInboundBytes: nil, now: start)
        #expect(began && !beganAgain, "once")
        // The held request comes through the queue again: read from the opener's first byte.
        let requeued = classify(FilterParsingTests.tcp4(payload: request, sequence: 1_000), id: 2)
        #expect(requeued
            == .data(flowID: flow.id, action: .hold, questions: [.data(.outbound, offset: 0, bytes: Array("GET ".utf8))]))
        let overdue = tracker.expire(now: start + .seconds(3), deadline: .seconds(2))
        #expect(overdue.map(\.id) == [flow.id], "an unanswered question is overdue")
        let progress = tracker.passData(flowID: flow.id, side: .outbound, passBytes: FlowDataFilter.passAll, peekBytes: 0, now: start)
        #expect(progress == FlowTracker.DataProgress(release: [2], questions: [], passesEverything: true))
        let overdueAfter = tracker.expire(now: start + .seconds(3), deadline: .seconds(2))
        #expect(overdueAfter.isEmpty)
        #expect(tracker.waitingFlows.map(\.id) == [flow.id], "a flow being read waits on the provider")
        let decided = tracker.decide(flowID: flow.id, .allow, now: start)
        #expect(decided == FlowTracker.Decided(held: [], inboundPassed: 0))
    }
}
