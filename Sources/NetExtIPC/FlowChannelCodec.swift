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
/// verdict (provider → netextd): `0x02 | flow id u64 | verdict u8 (0 allow, 1 drop, 2 needRules)`
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
    /// Host names and URLs longer than this are cut (URLs are for matching, not fetching).
    public static let maximumText = 4_096

    private static let transports: [FlowProtocol] = [.tcp, .udp, .icmp, .icmpv6, .other]
    private static let verdicts: [FilterVerdict] = [.allow, .drop, .needRules]

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

    public static func encodeVerdict(flowID: UInt64, _ verdict: FilterVerdict) -> [UInt8] {
        var bytes: [UInt8] = [verdictTag]
        append(flowID, to: &bytes)
        bytes.append(UInt8(verdicts.firstIndex(of: verdict)!))
        return bytes
    }

    public static func decodeVerdict(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> (flowID: UInt64, verdict: FilterVerdict) {
        var reader = Reader(bytes: bytes)
        guard try reader.uint8() == verdictTag else { throw .invalid("not a verdict message", at: 0) }
        let id = try reader.uint64()
        let value = try reader.uint8()
        guard Int(value) < verdicts.count else { throw .invalid("verdict \(value)", at: reader.offset - 1) }
        guard reader.offset == bytes.count else { throw .invalid("\(bytes.count - reader.offset) bytes after the end", at: reader.offset) }
        return (id, verdicts[Int(value)])
    }

    private static func appendText(_ text: String, to bytes: inout [UInt8]) {
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

    private static func append<Value: FixedWidthInteger>(_ value: Value, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
    }

    private struct Reader {
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
