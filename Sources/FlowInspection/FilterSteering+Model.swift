import NetExtCore

/// What `FilterSteering.restoreInput` does to one packet, computed instead of installed: the
/// rules' order and marks, for fakes of the kernel (NetExtTesting's `SimulatedFilterKernel`)
/// and for reading the rules. It covers what the rules decide by marks, direction, loopback,
/// owner, the provider's `FilterSettings` and empty TCP segments; conntrack itself (which
/// packets belong to one flow, the ORIGINAL and REPLY directions) is the caller's.
extension FilterSteering {
    /// One packet at the hook, as the rules see it.
    public struct SteeredPacket: Sendable, Hashable {
        public var packet: FlowPacket
        /// At the output hook (leaving this machine) rather than the input hook.
        public var isOutbound: Bool
        /// Leaves or arrives on the loopback interface.
        public var isLoopback: Bool
        /// Belongs to the flow's reply direction (the side that answered the connection).
        public var isReply: Bool
        /// The owning local socket's user (output hook only).
        public var ownerUID: UInt32?
        /// The packet's mark (netextd sets verdict bits on a packet it re-injects).
        public var mark: UInt32

        public init(packet: FlowPacket, isOutbound: Bool, isLoopback: Bool = false, isReply: Bool = false, ownerUID: UInt32? = nil, mark: UInt32 = 0) {
            self.packet = packet
            self.isOutbound = isOutbound
            self.isLoopback = isLoopback
            self.isReply = isReply
            self.ownerUID = ownerUID
            self.mark = mark
        }
    }

    /// Where the rules send a packet.
    public enum Outcome: Sendable, Hashable {
        /// On through the hook.
        case pass
        case drop
        /// Refused with a TCP reset.
        case reset
        /// To netextd's queue, with this packet mark (the reply bit set for the reply side).
        case queue(mark: UInt32)
    }

    /// Runs the steering chain over `packet`; `connectionMark` is its flow's conntrack mark,
    /// changed as the rules change it.
    public func outcome(of packet: SteeredPacket, connectionMark: inout UInt32) -> Outcome {
        let mask = Self.verdictMask
        let isTCP = packet.packet.transport == .tcp
        let flags = packet.packet.tcpFlags
        let isReset = isTCP && flags & 0x04 != 0
        let isFin = isTCP && flags & 0x01 != 0
        func setVerdict(_ value: UInt32) { connectionMark = connectionMark & ~mask | value }
        func refuse() -> Outcome { isTCP ? .reset : .drop }

        if connectionMark & mask == Self.allowMark || packet.isLoopback { return .pass }
        if isReset, connectionMark & mask != 0 { return .pass }
        switch packet.mark & mask {
        case Self.allowMark:
            setVerdict(Self.allowMark)
            return .pass
        case Self.quietDropMark:
            setVerdict(Self.quietDropMark)
            return .drop
        case Self.dropMark:
            setVerdict(Self.dropMark)
            return refuse()
        default: break
        }
        switch connectionMark & mask {
        case Self.quietDropMark: return .drop
        case Self.dropMark: return refuse()
        default: break
        }
        if packet.isOutbound, let uid = packet.ownerUID, exemptUIDs.contains(uid) {
            setVerdict(Self.allowMark)
            return .pass
        }
        if let settings, !packet.isReply {
            if let action = Self.firstAction(of: settings, for: packet) {
                switch action {
                case .allow: setVerdict(Self.allowMark)
                case .drop: setVerdict(Self.dropMark)
                case .filterData: break
                }
            }
            switch connectionMark & mask {
            case Self.allowMark: return .pass
            case Self.dropMark: return refuse()
            default: break
            }
        }
        // Empty TCP segments of undecided flows pass (handshakes carry nothing to judge).
        if isTCP, !isFin, !isReset, packet.packet.payloadLength == 0 { return .pass }
        return .queue(mark: packet.isReply ? packet.mark | Self.replyMark : packet.mark)
    }

    /// The settings chain for a flow's first packet: the first rule that matches decides; the
    /// default `allow` marks what none matched (nil: the queue path goes on).
    static func firstAction(of settings: FilterSettings, for steered: SteeredPacket) -> FilterSettings.Action? {
        let packet = steered.packet
        let remote = steered.isOutbound ? packet.destination : packet.source
        let remotePort = steered.isOutbound ? packet.destinationPort : packet.sourcePort
        let localPort = steered.isOutbound ? packet.sourcePort : packet.destinationPort
        for rule in settings.rules {
            if let direction = rule.direction, (direction == .outbound) != steered.isOutbound { continue }
            if let prefix = rule.remotePrefix {
                guard prefix.isIPv6 == packet.isIPv6, prefix.contains(IPPrefix(address: remote, length: remote.count * 8)) else { continue }
            }
            if let transport = rule.transport, transport != packet.transport { continue }
            if let port = rule.remotePort, port != remotePort { continue }
            if let port = rule.localPort, port != localPort { continue }
            return rule.action == .filterData ? nil : rule.action
        }
        return settings.defaultAction == .allow ? .allow : nil
    }
}
