import NetExtCore

/// The fast path between netextd and a filter data provider: each new flow and each verdict is
/// one message on a sequenced-packet socket (the provider's descriptor 4), in this binary
/// layout (all integers big-endian):
///
/// flow (netextd → provider): `0x01 | flow id u64 | direction u8 (0 out, 1 in) | transport u8
/// (0 tcp, 1 udp, 2 icmp, 3 icmpv6, 4 other) | local port u16 | remote port u16 | local address
/// length u8 (4/16) + bytes | remote address length u8 + bytes | flags u8 (bit 0: owner known,
/// bit 1: process known) | uid u32 | gid u32 | [process: pid u32 | executable length u16 + UTF-8
/// | cgroup length u16 + UTF-8] | host name length u16 + UTF-8 | URL length u16 + UTF-8`
///
/// verdict (provider → netextd): `0x02 | flow id u64 | verdict u8 (0 allow, 1 drop, 2 needRules,
/// 3 filterData) | [filterData: peek outbound u32 | peek inbound u32]`, a peek of `0xFFFFFFFF`
/// leaving that direction unfiltered
///
/// data (netextd → provider): `0x03 | flow id u64 | side u8 (0 outbound, 1 inbound) | offset u64 |
/// the bytes (the rest of the message)`
///
/// data complete (netextd → provider): `0x04 | flow id u64 | side u8`
///
/// data verdict (provider → netextd): `0x05 | flow id u64 | side u8 | verdict u8 (0 allow, 1 drop,
/// 2 data, 3 remediate) | [data: pass u64 | peek u32] | [remediate: link text length u16 + UTF-8 |
/// link URL length u16 + UTF-8]`
///
/// Everything else between them stays on the JSON control connection (descriptor 3).
public enum FlowChannelCodec {
    public enum DecodeError: Error, Sendable, Hashable, CustomStringConvertible {
        case truncated(at: Int)
        case invalid(String, at: Int)
        public var description: String {
            switch self {
            case .truncated(let offset): "flow message truncated at byte \(offset)"
            case .invalid(let what, let offset): "flow message: \(what) at byte \(offset)"
            }
        }
    }

    public static let flowTag: UInt8 = 1
    public static let verdictTag: UInt8 = 2
    public static let dataTag: UInt8 = 3
    public static let completeTag: UInt8 = 4
    public static let dataVerdictTag: UInt8 = 5
    /// A peek window meaning "this direction is not filtered".
    static let unfiltered: UInt32 = .max

    /// A message netextd sends the data provider.
    public enum ToProvider: Sendable, Hashable {
        case flow(FilterFlow)
        case data(flowID: UInt64, side: FlowDataFilter.Side, offset: Int, bytes: [UInt8])
        case complete(flowID: UInt64, side: FlowDataFilter.Side)
    }

    /// A message the data provider sends netextd.
    public enum FromProvider: Sendable, Hashable {
        case verdict(flowID: UInt64, FilterNewFlowVerdict)
        case dataVerdict(flowID: UInt64, side: FlowDataFilter.Side, FilterDataVerdict)
    }
    /// Host names and URLs longer than this are cut (URLs are for matching, not fetching).
    public static let maximumText = 4_096
    /// The longest message either side sends (a data message with a full peek window).
    public static let maximumMessage = FlowDataFilter.maximumPeek + 64

    private static let transports: [FlowProtocol] = [.tcp, .udp, .icmp, .icmpv6, .other]

    public static func encode(_ flow: FilterFlow) -> [UInt8] {
        var bytes: [UInt8] = [flowTag]
        bytes.reserveCapacity(64 + (flow.remoteHostname?.utf8.count ?? 0) + (flow.url?.utf8.count ?? 0))
        append(flow.id, to: &bytes)
        bytes.append(flow.direction == .outbound ? 0 : 1)
        bytes.append(UInt8(transports.firstIndex(of: flow.transport) ?? 4))
        append(flow.localPort, to: &bytes)
        append(flow.remotePort, to: &bytes)
        for text in [flow.localAddress, flow.remoteAddress] {
            let address = IPPrefix.parseAddress(text) ?? [0, 0, 0, 0]
            bytes.append(UInt8(address.count))
            bytes += address
        }
        let application = flow.sourceApplication
        let process = application?.pid
        bytes.append((application == nil ? 0 : 1) | (process == nil ? 0 : 2))
        append(application?.uid ?? 0, to: &bytes)
        append(application?.gid ?? 0, to: &bytes)
        if let process {
            append(UInt32(bitPattern: process), to: &bytes)
            appendText(application?.executable ?? "", to: &bytes)
            appendText(application?.cgroup ?? "", to: &bytes)
        }
        appendText(flow.remoteHostname ?? "", to: &bytes)
        appendText(flow.url ?? "", to: &bytes)
        return bytes
    }

    public static func decodeFlow(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> FilterFlow {
        var reader = Reader(bytes: bytes)
        guard try reader.uint8() == flowTag else { throw .invalid("not a flow message", at: 0) }
        let id = try reader.uint64()
        let directionByte = try reader.uint8()
        guard directionByte <= 1 else { throw .invalid("direction \(directionByte)", at: reader.offset - 1) }
        let transportByte = try reader.uint8()
        guard Int(transportByte) < transports.count else { throw .invalid("transport \(transportByte)", at: reader.offset - 1) }
        let localPort = try reader.uint16()
        let remotePort = try reader.uint16()
        let local = try reader.address()
        let remote = try reader.address()
        let flags = try reader.uint8()
        guard flags <= 1 || flags == 3 else { throw .invalid("flags \(flags)", at: reader.offset - 1) }
        let uid = try reader.uint32()
        let gid = try reader.uint32()
        guard flags & 1 == 1 || (uid == 0 && gid == 0) else { throw .invalid("an owner without the owner flag", at: reader.offset - 8) }
        var application = flags & 1 == 1 ? SourceApplication(uid: uid, gid: gid) : nil
        if flags & 2 == 2 {
            application?.pid = Int32(bitPattern: try reader.uint32())
            let executable = try reader.text()
            let cgroup = try reader.text()
            application?.executable = executable.isEmpty ? nil : executable
            application?.cgroup = cgroup.isEmpty ? nil : cgroup
        }
        let host = try reader.text()
        let url = try reader.text()
        guard reader.offset == bytes.count else { throw .invalid("\(bytes.count - reader.offset) bytes after the end", at: reader.offset) }
        return FilterFlow(
            id: id, direction: directionByte == 0 ? .outbound : .inbound, transport: transports[Int(transportByte)],
            localAddress: IPPrefix.format(local), localPort: localPort, remoteAddress: IPPrefix.format(remote), remotePort: remotePort,
            remoteHostname: host.isEmpty ? nil : host, url: url.isEmpty ? nil : url,
            sourceApplication: application)
    }

    public static func encode(_ message: ToProvider) -> [UInt8] {
        switch message {
        case .flow(let flow): return encode(flow)
        case .data(let flowID, let side, let offset, let data):
            var bytes: [UInt8] = [dataTag]
            bytes.reserveCapacity(18 + data.count)
            append(flowID, to: &bytes)
            bytes.append(side.rawValue)
            append(UInt64(offset), to: &bytes)
            bytes += data
            return bytes
        case .complete(let flowID, let side):
            var bytes: [UInt8] = [completeTag]
            append(flowID, to: &bytes)
            bytes.append(side.rawValue)
            return bytes
        }
    }

    public static func decodeToProvider(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> ToProvider {
        guard let tag = bytes.first else { throw .truncated(at: 0) }
        var reader = Reader(bytes: bytes, offset: 1)
        switch tag {
        case flowTag: return .flow(try decodeFlow(bytes))
        case dataTag:
            let id = try reader.uint64()
            let side = try reader.side()
            let offset = try reader.uint64()
            guard offset <= UInt64(FlowDataFilter.passAll) else { throw .invalid("offset \(offset)", at: reader.offset - 8) }
            let data = Array(UnsafeRawBufferPointer(rebasing: bytes[reader.offset...]))
            guard data.count <= FlowDataFilter.maximumPeek else { throw .invalid("\(data.count) bytes of data", at: reader.offset) }
            return .data(flowID: id, side: side, offset: Int(offset), bytes: data)
        case completeTag:
            let id = try reader.uint64()
            let side = try reader.side()
            try reader.finish()
            return .complete(flowID: id, side: side)
        default:
            throw .invalid("message type \(tag)", at: 0)
        }
    }

    public static func encode(_ message: FromProvider) -> [UInt8] {
        switch message {
        case .verdict(let flowID, let verdict):
            var bytes: [UInt8] = [verdictTag]
            append(flowID, to: &bytes)
            switch verdict {
            case .allow: bytes.append(0)
            case .drop: bytes.append(1)
            case .needRules: bytes.append(2)
            case .filterData(let inbound, let outbound):
                bytes.append(3)
                append(outbound.map(peekWindow) ?? unfiltered, to: &bytes)
                append(inbound.map(peekWindow) ?? unfiltered, to: &bytes)
            }
            return bytes
        case .dataVerdict(let flowID, let side, let verdict):
            var bytes: [UInt8] = [dataVerdictTag]
            append(flowID, to: &bytes)
            bytes.append(side.rawValue)
            switch verdict {
            case .allow: bytes.append(0)
            case .drop: bytes.append(1)
            case .data(let pass, let peek):
                bytes.append(2)
                append(UInt64(min(max(pass, 0), FlowDataFilter.passAll)), to: &bytes)
                append(peekWindow(peek), to: &bytes)
            case .remediate(let remediation):
                bytes.append(3)
                appendText(remediation.requestAccessText ?? "", to: &bytes)
                appendText(remediation.requestAccessURL ?? "", to: &bytes)
            }
            return bytes
        }
    }

    /// A peek window as sent: cut to `FlowDataFilter.maximumPeek`.
    private static func peekWindow(_ bytes: Int) -> UInt32 { UInt32(min(max(bytes, 0), FlowDataFilter.maximumPeek)) }

    public static func decodeFromProvider(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> FromProvider {
        guard let tag = bytes.first else { throw .truncated(at: 0) }
        var reader = Reader(bytes: bytes, offset: 1)
        switch tag {
        case verdictTag:
            let id = try reader.uint64()
            let value = try reader.uint8()
            let verdict: FilterNewFlowVerdict
            switch value {
            case 0: verdict = .allow
            case 1: verdict = .drop
            case 2: verdict = .needRules
            case 3:
                let outbound = try reader.peek(orUnfiltered: true)
                let inbound = try reader.peek(orUnfiltered: true)
                verdict = .filterData(
                    peekInboundBytes: inbound == unfiltered ? nil : Int(inbound), peekOutboundBytes: outbound == unfiltered ? nil : Int(outbound))
            default: throw .invalid("verdict \(value)", at: reader.offset - 1)
            }
            try reader.finish()
            return .verdict(flowID: id, verdict)
        case dataVerdictTag:
            let id = try reader.uint64()
            let side = try reader.side()
            let value = try reader.uint8()
            let verdict: FilterDataVerdict
            switch value {
            case 0: verdict = .allow
            case 1: verdict = .drop
            case 2:
                let pass = try reader.uint64()
                guard pass <= UInt64(FlowDataFilter.passAll) else { throw .invalid("pass \(pass)", at: reader.offset - 8) }
                let peek = try reader.peek(orUnfiltered: false)
                verdict = .data(passBytes: Int(pass), peekBytes: Int(peek))
            case 3:
                let text = try reader.text()
                let url = try reader.text()
                verdict = .remediate(FilterRemediation(requestAccessText: text.isEmpty ? nil : text, requestAccessURL: url.isEmpty ? nil : url))
            default: throw .invalid("data verdict \(value)", at: reader.offset - 1)
            }
            try reader.finish()
            return .dataVerdict(flowID: id, side: side, verdict)
        default:
            throw .invalid("message type \(tag)", at: 0)
        }
    }

    static func appendText(_ text: String, to bytes: inout [UInt8]) {
        // Cut at a character boundary, so what is sent is still UTF-8.
        var utf8: [UInt8] = []
        for scalar in text.unicodeScalars {
            let encoded = Array(String(scalar).utf8)
            if utf8.count + encoded.count > maximumText { break }
            utf8 += encoded
        }
        append(UInt16(utf8.count), to: &bytes)
        bytes += utf8
    }

    static func append<Value: FixedWidthInteger>(_ value: Value, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
    }

    struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func take(_ count: Int) throws(DecodeError) -> UnsafeRawBufferPointer {
            guard offset + count <= bytes.count else { throw .truncated(at: offset) }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        }

        mutating func integer<Value: FixedWidthInteger>(_: Value.Type) throws(DecodeError) -> Value {
            let raw = try take(MemoryLayout<Value>.size)
            return raw.reduce(0) { ($0 << 8) | Value($1) }
        }

        mutating func uint8() throws(DecodeError) -> UInt8 { try integer(UInt8.self) }
        mutating func uint16() throws(DecodeError) -> UInt16 { try integer(UInt16.self) }
        mutating func uint32() throws(DecodeError) -> UInt32 { try integer(UInt32.self) }
        mutating func uint64() throws(DecodeError) -> UInt64 { try integer(UInt64.self) }

        mutating func side() throws(DecodeError) -> FlowDataFilter.Side {
            let value = try uint8()
            guard let side = FlowDataFilter.Side(rawValue: value) else { throw .invalid("side \(value)", at: offset - 1) }
            return side
        }

        /// A peek window: at most `FlowDataFilter.maximumPeek`, or (where allowed) the
        /// "unfiltered" value.
        mutating func peek(orUnfiltered: Bool) throws(DecodeError) -> UInt32 {
            let value = try uint32()
            guard value <= UInt32(FlowDataFilter.maximumPeek) || (orUnfiltered && value == FlowChannelCodec.unfiltered) else {
                throw .invalid("peek window \(value)", at: offset - 4)
            }
            return value
        }

        func finish() throws(DecodeError) {
            guard offset == bytes.count else { throw .invalid("\(bytes.count - offset) bytes after the end", at: offset) }
        }

        mutating func address() throws(DecodeError) -> [UInt8] {
            let count = Int(try uint8())
            guard count == 4 || count == 16 else { throw .invalid("address length \(count)", at: offset - 1) }
            return Array(try take(count))
        }

        mutating func text() throws(DecodeError) -> String {
            let count = Int(try uint16())
            guard count <= FlowChannelCodec.maximumText else { throw .invalid("text of \(count) bytes", at: offset - 2) }
            let raw = try take(count)
            guard let text = String(validating: raw, as: UTF8.self) else { throw .invalid("text that is not UTF-8", at: offset - count) }
            return text
        }
    }
}
