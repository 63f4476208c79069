/// The data phase of one flow whose provider answered `filterData` (Apple's peek windows): for
/// each direction the provider chose to see, the flow's bytes in stream order, what has been
/// passed to the other end, how far the provider wants to look, and the packets held meanwhile.
/// Pure: packets are named by their queue ids; no I/O.
///
/// Offsets count the bytes of one direction from its first byte of payload (TCP: from the first
/// data segment's sequence number; UDP and ICMP: datagram payloads one after another). A packet
/// leaves (is accepted) once every byte it carries is passed; until then it is held, so nothing
/// the provider has not passed reaches the other end. Bytes the provider has not passed come
/// again, with what follows them, once more bytes arrive (Apple's `readBytesStartOffset` is
/// always the pass offset); a provider that passes nothing and looks no further waits for more
/// data or for the side to close (`complete`).
public struct FlowDataFilter: Sendable {
    /// Which way data moves: `outbound` is sent by the program on this machine, `inbound` is
    /// received by it (whichever side opened the flow).
    public enum Side: UInt8, Sendable, Hashable, Codable, CaseIterable {
        case outbound = 0
        case inbound = 1
    }

    /// What to do with one packet of the flow.
    public enum PacketAction: Sendable, Hashable {
        case accept
        /// Kept (by id) until its bytes are passed or the flow gets a final verdict.
        case hold
        /// More is buffered than the limit allows: dropped (TCP sends it again later).
        case drop
    }

    /// What the provider is to be asked next.
    public enum Question: Sendable, Hashable {
        /// `handleOutboundData` / `handleInboundData`: the bytes from `offset` (the pass offset)
        /// up to the peek limit, as far as they have arrived.
        case data(Side, offset: Int, bytes: [UInt8])
        /// `handleOutboundDataComplete` / `handleInboundDataComplete`: that side closed and every
        /// byte it sent has been shown.
        case complete(Side)
    }

    /// The largest peek window honoured per call (larger requests are cut to it).
    public static let maximumPeek = 65_536
    /// Bytes buffered per direction at most (seen, not yet passed); packets beyond are dropped.
    public static let bufferLimit = 1 << 20
    /// Packets held per direction at most; more are dropped.
    public static let heldLimit = 1_024
    /// Passing this many bytes (Apple's `NEFilterFlowBytesMax`) passes the rest of the side.
    public static let passAll = Int(UInt32.max)

    struct Stream: Sendable {
        var filtered: Bool
        /// TCP: the sequence number of offset 0.
        var base: UInt32?
        /// Bytes before this offset go through.
        var passed = 0
        /// The provider wants to see bytes up to here.
        var peekEnd: Int
        /// Contiguous bytes from `passed` (or from where `received` was when they began).
        var buffer: [UInt8] = []
        /// Offset of `buffer`'s first byte.
        var bufferOffset = 0
        /// Bytes out of order: offset → bytes.
        var pending: [Int: [UInt8]] = [:]
        /// Where the last question's bytes ended (nothing new to show below it).
        var shownEnd = 0
        /// The offset of the closing FIN (TCP) once seen.
        var finOffset: Int?
        var completeShown = false
        /// Where the bytes that reached the other end (accepted packets, contiguous from 0) end.
        var delivered = 0
        /// Queue ids of held packets and the offsets each starts and ends at.
        var held: [(id: UInt32, start: Int, end: Int)] = []
        /// A question is out and not answered yet.
        var asking = false

        var received: Int { bufferOffset + buffer.count }
        var buffered: Int { buffer.count + pending.values.reduce(0) { $0 + $1.count } }
        var passesEverything: Bool { !filtered || passed >= FlowDataFilter.passAll }
    }

    var streams: [Stream]

    /// `peekOutboundBytes`/`peekInboundBytes`: nil leaves that direction unfiltered.
    public init(peekOutboundBytes: Int?, peekInboundBytes: Int?, outboundBase: UInt32? = nil, inboundBase: UInt32? = nil) {
        func stream(_ peek: Int?, base: UInt32?) -> Stream {
            Stream(filtered: peek != nil, base: base, peekEnd: min(max(peek ?? 0, 0), Self.maximumPeek))
        }
        streams = [stream(peekOutboundBytes, base: outboundBase), stream(peekInboundBytes, base: inboundBase)]
    }

    /// Whether a direction is being filtered.
    public func isFiltered(_ side: Side) -> Bool { streams[Int(side.rawValue)].filtered }

    /// The bytes of `side` already passed to the other end.
    public func passedBytes(_ side: Side) -> Int { streams[Int(side.rawValue)].passed }

    /// TCP: the sequence number the receiving end of `side` expects next — the end of what
    /// reached it, not of what was passed: a held packet that carries passed bytes and some not
    /// passed has not arrived. A reset must carry exactly this number (RFC 5961 §3.2).
    /// nil when that side is not filtered or has not begun.
    public func nextSequence(_ side: Side) -> UInt32? {
        let stream = streams[Int(side.rawValue)]
        guard stream.filtered, let base = stream.base else { return nil }
        return base &+ UInt32(truncatingIfNeeded: stream.delivered)
    }

    /// Every filtered direction passes everything: the flow may be allowed outright.
    public var passesEverything: Bool { streams.allSatisfy(\.passesEverything) }

    /// A question is out for some direction.
    public var isAsking: Bool { streams.contains(where: \.asking) }

    /// Packets held, over both directions.
    public var heldPackets: [UInt32] { streams.flatMap { $0.held.map(\.id) } }

    /// Takes one packet of the flow. `sequence` is the TCP sequence number (nil for datagrams);
    /// `fin`: the TCP FIN flag.
    public mutating func receive(
        packetID: UInt32, side: Side, sequence: UInt32?, payload: UnsafeRawBufferPointer, fin: Bool = false
    ) -> PacketAction {
        var stream = streams[Int(side.rawValue)]
        defer { streams[Int(side.rawValue)] = stream }
        guard stream.filtered, stream.passed < Self.passAll else { return .accept }
        if payload.isEmpty && !fin { return .accept }
        let start: Int
        if let sequence {
            if stream.base == nil { stream.base = sequence }
            let distance = sequence &- stream.base!
            // Before offset 0 (a retransmission of bytes that were never filtered): let it be.
            guard distance < 1 << 31 else { return .accept }
            start = Int(distance)
        } else {
            // Datagrams are never out of order: each continues the stream.
            start = stream.received
        }
        let end = start + payload.count
        if fin { stream.finOffset = end }
        if end <= stream.passed {
            Self.deliver(start: start, end: end, in: &stream)
            return .accept
        }
        guard stream.held.count < Self.heldLimit else { return .drop }
        if end > stream.received {
            if stream.buffered + payload.count > Self.bufferLimit { return .drop }
            if start <= stream.received {
                stream.buffer += payload[(stream.received - start)...]
                Self.mergePending(&stream)
            } else if stream.pending[start].map({ $0.count < payload.count }) ?? true {
                stream.pending[start] = Array(payload)
            }
        }
        stream.held.append((packetID, start, end))
        return .hold
    }

    private static func mergePending(_ stream: inout Stream) {
        while let (offset, bytes) = stream.pending.first(where: { $0.key <= stream.received }) {
            stream.pending[offset] = nil
            let end = offset + bytes.count
            if end > stream.received { stream.buffer += bytes[(stream.received - offset)...] }
        }
    }

    /// The questions to send now: for each direction with no question out, its unpassed bytes
    /// up to the peek limit when something new arrived, or its completion once it closed and
    /// everything was shown. Marks them asked.
    public mutating func nextQuestions() -> [Question] {
        var questions: [Question] = []
        for side in Side.allCases {
            var stream = streams[Int(side.rawValue)]
            guard stream.filtered, !stream.asking, stream.passed < Self.passAll else { continue }
            let visibleEnd = min(stream.received, stream.peekEnd)
            if visibleEnd > stream.passed, visibleEnd > stream.shownEnd {
                let from = stream.passed - stream.bufferOffset
                questions.append(.data(side, offset: stream.passed, bytes: Array(stream.buffer[from..<(visibleEnd - stream.bufferOffset)])))
                stream.shownEnd = visibleEnd
                stream.asking = true
            } else if let fin = stream.finOffset, stream.received >= fin, stream.shownEnd >= fin || stream.passed >= fin, !stream.completeShown {
                questions.append(.complete(side))
                stream.completeShown = true
                stream.asking = true
            }
            streams[Int(side.rawValue)] = stream
        }
        return questions
    }

    /// Applies the provider's `dataVerdict(passBytes:peekBytes:)` for `side`: `passBytes` count from
    /// the pass offset of the question it answers, `peekBytes` from the new pass offset. Returns
    /// the packets that may now leave.
    public mutating func pass(_ side: Side, bytes passBytes: Int, peek peekBytes: Int) -> [UInt32] {
        var stream = streams[Int(side.rawValue)]
        defer { streams[Int(side.rawValue)] = stream }
        stream.asking = false
        let passed = passBytes >= Self.passAll ? Self.passAll : min(stream.passed + max(passBytes, 0), Self.passAll)
        stream.passed = max(stream.passed, passed)
        stream.peekEnd = max(stream.passed, min(stream.passed + min(max(peekBytes, 0), Self.maximumPeek), Self.passAll))
        // Bytes passed before they arrived count as received: nothing below needs showing.
        if stream.passed >= stream.received {
            stream.buffer = []
            stream.bufferOffset = min(stream.passed, Self.passAll)
            stream.pending = stream.pending.filter { $0.key + $0.value.count > stream.passed }
            Self.mergePending(&stream)
        } else if stream.passed > stream.bufferOffset {
            stream.buffer.removeFirst(stream.passed - stream.bufferOffset)
            stream.bufferOffset = stream.passed
        }
        stream.shownEnd = max(stream.shownEnd, stream.passed)
        let leaving = stream.held.filter { $0.end <= stream.passed }.sorted { $0.start < $1.start }
        stream.held.removeAll { $0.end <= stream.passed }
        for packet in leaving { Self.deliver(start: packet.start, end: packet.end, in: &stream) }
        return leaving.map(\.id)
    }

    /// A packet of `start..<end` goes to the other end: what has reached it grows if the packet
    /// continues it.
    private static func deliver(start: Int, end: Int, in stream: inout Stream) {
        if start <= stream.delivered { stream.delivered = max(stream.delivered, end) }
    }
}
