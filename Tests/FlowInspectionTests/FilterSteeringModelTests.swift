import FlowInspection
import NetExtCore
import Testing

/// The computed steering (`FilterSteering.outcome`) against what `restoreInput` says, rule by rule.
@Suite("Filter steering, computed: what the installed rules do to one packet")
struct FilterSteeringModelTests {
    static let laptop: [UInt8] = [198, 51, 100, 2]
    static let server: [UInt8] = [203, 0, 113, 2]
    let steering = FilterSteering(queueNumber: 7100, failOpen: false, exemptUIDs: [1500])

    static func tcp(flags: UInt8, payload: [UInt8] = []) -> FlowPacket {
        FlowPacket(TCPSegmentBuilder.segment(
            source: laptop, destination: server, sourcePort: 40000, destinationPort: 443, sequence: 1, acknowledgement: 0, flags: flags, payload: payload))!
    }

    static func echo() -> FlowPacket {
        // IPv4 ICMP echo request, no options.
        var bytes: [UInt8] = [0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 1, 0, 0] + laptop + server
        bytes += [8, 0, 0, 0, 0x12, 0x34, 0, 1]
        return FlowPacket(bytes)!
    }

    @Test("an undecided flow's data goes to the queue; its empty TCP segments pass; FIN goes to the queue")
    func undecided() {
        var mark: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: Self.tcp(flags: FlowPacket.syn), isOutbound: true), connectionMark: &mark) == .pass)
        #expect(steering.outcome(of: .init(packet: Self.tcp(flags: 0x18, payload: [1]), isOutbound: true), connectionMark: &mark) == .queue(mark: 0))
        #expect(steering.outcome(of: .init(packet: Self.tcp(flags: 0x11), isOutbound: true), connectionMark: &mark) == .queue(mark: 0))
        #expect(steering.outcome(of: .init(packet: Self.echo(), isOutbound: true), connectionMark: &mark) == .queue(mark: 0))
        #expect(mark == 0)
    }

    @Test("the reply side is queued with the reply bit")
    func replyBit() {
        var mark: UInt32 = 0
        let outcome = steering.outcome(of: .init(packet: Self.echo(), isOutbound: false, isReply: true), connectionMark: &mark)
        #expect(outcome == .queue(mark: FilterSteering.replyMark))
    }

    @Test("a re-injected packet's verdict mark becomes the flow's: allowed passes from then on; dropped TCP is reset, other drops are silent")
    func verdictMarks() {
        var mark: UInt32 = 0
        let data = Self.tcp(flags: 0x18, payload: [1])
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true, mark: FilterSteering.allowMark), connectionMark: &mark) == .pass)
        #expect(mark == FilterSteering.allowMark)
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true), connectionMark: &mark) == .pass)

        var dropped: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true, mark: FilterSteering.dropMark), connectionMark: &dropped) == .reset)
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true), connectionMark: &dropped) == .reset)
        // Resets of a dropped flow may leave.
        #expect(steering.outcome(of: .init(packet: Self.tcp(flags: 0x04), isOutbound: true), connectionMark: &dropped) == .pass)
        var echo: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: Self.echo(), isOutbound: true, mark: FilterSteering.dropMark), connectionMark: &echo) == .drop)
        var quiet: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true, mark: FilterSteering.quietDropMark), connectionMark: &quiet) == .drop)
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true), connectionMark: &quiet) == .drop)
    }

    @Test("loopback and the exempt user's own connections are not filtered (the exempt flow is marked allowed)")
    func exemptions() {
        var mark: UInt32 = 0
        let data = Self.tcp(flags: 0x18, payload: [1])
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true, isLoopback: true), connectionMark: &mark) == .pass)
        #expect(mark == 0)
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true, ownerUID: 1000), connectionMark: &mark) == .queue(mark: 0))
        #expect(steering.outcome(of: .init(packet: data, isOutbound: true, ownerUID: 1500), connectionMark: &mark) == .pass)
        #expect(mark == FilterSteering.allowMark)
    }

    @Test("the provider's FilterSettings decide at the flow's packets in its opening direction: first match wins, filterData stops the search, default allow")
    func settings() throws {
        var steering = self.steering
        steering.settings = FilterSettings(rules: [
            .init(remotePrefix: try IPPrefix("203.0.113.2/32"), transport: .icmp, action: .drop),
            .init(remotePrefix: try IPPrefix("203.0.113.0/24"), remotePort: 443, transport: .tcp, action: .filterData),
            .init(remotePrefix: try IPPrefix("203.0.113.0/24"), action: .allow),
        ], defaultAction: .filterData)
        var echo: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: Self.echo(), isOutbound: true), connectionMark: &echo) == .drop)
        #expect(echo == FilterSteering.dropMark)
        var https: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: Self.tcp(flags: 0x18, payload: [1]), isOutbound: true), connectionMark: &https) == .queue(mark: 0))
        #expect(https == 0)
        // The reply side never meets the settings.
        var reply: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: Self.echo(), isOutbound: false, isReply: true), connectionMark: &reply) == .queue(mark: FilterSteering.replyMark))

        steering.settings = FilterSettings(rules: [], defaultAction: .allow)
        var other: UInt32 = 0
        #expect(steering.outcome(of: .init(packet: Self.echo(), isOutbound: true), connectionMark: &other) == .pass)
        #expect(other == FilterSteering.allowMark)
    }

    @Test("every rule the model follows is in the installed rules")
    func rulesAgree() {
        var steering = self.steering
        steering.settings = FilterSettings(rules: [.init(remotePrefix: try! IPPrefix("203.0.113.2/32"), action: .drop)])
        let rules = steering.restoreInput()
        for line in [
            "-A NETEXTD-FLT-OUT -m connmark --mark 0x20000000/0x60000000 -j RETURN",
            "-A NETEXTD-FLT-OUT -o lo -j RETURN",
            "-A NETEXTD-FLT-OUT -p tcp --tcp-flags RST RST -m connmark ! --mark 0x0/0x60000000 -j RETURN",
            "-A NETEXTD-FLT-OUT -m mark --mark 0x40000000/0x60000000 -j CONNMARK --set-xmark 0x40000000/0x60000000",
            "-A NETEXTD-FLT-OUT -m owner --uid-owner 1500 -j CONNMARK --set-xmark 0x20000000/0x60000000",
            "-A NETEXTD-FLT-OUT -m conntrack --ctdir ORIGINAL -j NETEXTD-FLT-SET-OUT",
            "-A NETEXTD-FLT-SET-OUT -d 203.0.113.2/32 -j CONNMARK --set-xmark 0x40000000/0x60000000",
            "-A NETEXTD-FLT-IN -m conntrack --ctdir REPLY -j MARK --set-xmark 0x8000000/0x8000000",
            "-A NETEXTD-FLT-OUT -j NFQUEUE --queue-num 7100",
        ] {
            #expect(rules.contains(line + "\n"), "missing: \(line)")
        }
    }
}
