import NetExtCore
import VariableLengthIntegers

// Prefixes are NetExtCore's `IPPrefix` (4 or 16 address bytes and a length; host bits kept as
// sent): on the wire `IP Version (8)`, `IP Address (32..128)`, `IP Prefix Length (8)`
// (RFC 9484 §4.7.1 and §4.7.2).

/// One entry of ADDRESS_ASSIGN or ADDRESS_REQUEST (RFC 9484 §4.7.1, §4.7.2; both carry the same
/// fields): an address or prefix and its request ID. Assigned: what the peer may use as its
/// source, answering request `requestID` (0: an assignment nobody asked for). Requested: what the
/// sender would like (all zeros: any of that version), under an ID that is never 0.
public struct ProxiedAddress: Sendable, Hashable {
    public var requestID: UInt64
    public var prefix: IPPrefix

    public init(requestID: UInt64, prefix: IPPrefix) {
        self.requestID = requestID
        self.prefix = prefix
    }
}

public typealias AssignedAddress = ProxiedAddress
public typealias RequestedAddress = ProxiedAddress

/// One entry of ROUTE_ADVERTISEMENT (RFC 9484 §4.7.3): destinations from `start` to `end`
/// (inclusive) reachable through the tunnel, for IP protocol `ipProtocol` (0: every protocol).
public struct IPAddressRange: Sendable, Hashable {
    public var version: UInt8
    public var start: [UInt8]
    public var end: [UInt8]
    public var ipProtocol: UInt8

    public init(version: UInt8, start: [UInt8], end: [UInt8], ipProtocol: UInt8 = 0) {
        self.version = version
        self.start = start
        self.end = end
        self.ipProtocol = ipProtocol
    }
}

/// The connect-ip capsules (RFC 9484 §4.7), read and written with the checks the RFC asks of a
/// receiver: IP versions 4 and 6 only, prefix lengths within the address, request IDs of
/// requests never 0 and a request never empty, route ranges with start ≤ end, in order (IP
/// version, then IP protocol, then start address) and not overlapping within one version and
/// protocol. A capsule that fails any of them is malformed: the receiver aborts the stream.
public enum IPProxyingCapsule: Sendable, Hashable {
    case addressAssign([AssignedAddress])
    case addressRequest([RequestedAddress])
    case routeAdvertisement([IPAddressRange])

    /// Reads a connect-ip capsule; nil for a capsule of another type (DATAGRAM, or one unknown).
    public init?(_ capsule: Capsule) throws(CapsuleError) {
        guard let kind = capsule.kind, kind != .datagram else { return nil }
        var reader = Reader(value: capsule.value, type: capsule.type)
        switch kind {
        case .addressAssign:
            var assigned: [AssignedAddress] = []
            while !reader.atEnd {
                let requestID = try reader.varint("Request ID")
                assigned.append(AssignedAddress(requestID: requestID, prefix: try reader.prefix()))
            }
            self = .addressAssign(assigned)
        case .addressRequest:
            var requested: [RequestedAddress] = []
            guard !reader.atEnd else { throw reader.malformed("an ADDRESS_REQUEST must ask for at least one address") }
            while !reader.atEnd {
                let at = reader.offset
                let requestID = try reader.varint("Request ID")
                guard requestID != 0 else { throw .malformedValue(type: capsule.type, reason: "Request ID 0 (a request's ID is never 0)", offset: at) }
                requested.append(RequestedAddress(requestID: requestID, prefix: try reader.prefix()))
            }
            self = .addressRequest(requested)
        case .routeAdvertisement:
            var ranges: [IPAddressRange] = []
            while !reader.atEnd {
                let at = reader.offset
                let version = try reader.version()
                let start = try reader.bytes(version == 4 ? 4 : 16, "Start IP Address")
                let end = try reader.bytes(version == 4 ? 4 : 16, "End IP Address")
                let ipProtocol = try reader.byte("IP Protocol")
                let range = IPAddressRange(version: version, start: start, end: end, ipProtocol: ipProtocol)
                guard !Self.isLess(end, start) else {
                    throw .malformedValue(type: capsule.type, reason: "range \(Self.text(start))–\(Self.text(end)) starts after its end", offset: at)
                }
                if let previous = ranges.last {
                    let ordered = (previous.version, previous.ipProtocol) < (version, ipProtocol)
                        || ((previous.version, previous.ipProtocol) == (version, ipProtocol) && Self.isLess(previous.end, start))
                    guard ordered else {
                        throw .malformedValue(
                            type: capsule.type,
                            reason: "range \(Self.text(start))–\(Self.text(end)) (protocol \(ipProtocol)) is out of order with or overlaps the one before it", offset: at)
                    }
                }
                ranges.append(range)
            }
            self = .routeAdvertisement(ranges)
        case .datagram:
            return nil
        }
    }

    /// The capsule's wire form.
    public var capsule: Capsule {
        var value: [UInt8] = []
        switch self {
        case .addressAssign(let assigned):
            Self.append(assigned, to: &value)
            return Capsule(.addressAssign, value: value)
        case .addressRequest(let requested):
            Self.append(requested, to: &value)
            return Capsule(.addressRequest, value: value)
        case .routeAdvertisement(let ranges):
            for range in ranges {
                value.append(range.version)
                value += range.start
                value += range.end
                value.append(range.ipProtocol)
            }
            return Capsule(.routeAdvertisement, value: value)
        }
    }

    private static func append(_ entries: [ProxiedAddress], to value: inout [UInt8]) {
        for entry in entries {
            QUICVarint.append(entry.requestID, to: &value)
            value.append(entry.prefix.isIPv6 ? 6 : 4)
            value += entry.prefix.address
            value.append(UInt8(entry.prefix.length))
        }
    }

    /// Big-endian comparison of two addresses of one length.
    static func isLess(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        for (a, b) in zip(left, right) where a != b { return a < b }
        return false
    }

    static func text(_ address: [UInt8]) -> String { IPPrefix.format(address) }

    /// Reads a capsule's value field by field, naming the field and offset when it runs out.
    private struct Reader {
        let value: [UInt8]
        let type: UInt64
        var offset = 0

        init(value: [UInt8], type: UInt64) {
            self.value = value
            self.type = type
        }

        var atEnd: Bool { offset == value.count }

        func malformed(_ reason: String) -> CapsuleError { .malformedValue(type: type, reason: reason, offset: offset) }

        mutating func varint(_ field: String) throws(CapsuleError) -> UInt64 {
            guard let read = QUICVarint.read(value, &offset) else { throw malformed("the value ends inside \(field)") }
            return read
        }

        mutating func byte(_ field: String) throws(CapsuleError) -> UInt8 {
            guard offset < value.count else { throw malformed("the value ends before \(field)") }
            defer { offset += 1 }
            return value[offset]
        }

        mutating func bytes(_ count: Int, _ field: String) throws(CapsuleError) -> [UInt8] {
            guard value.count - offset >= count else { throw malformed("the value ends inside \(field) (\(count) bytes)") }
            defer { offset += count }
            return Array(value[offset..<offset + count])
        }

        mutating func version() throws(CapsuleError) -> UInt8 {
            let at = offset
            let version = try byte("IP Version")
            guard version == 4 || version == 6 else {
                throw .malformedValue(type: type, reason: "IP Version \(version) (only 4 and 6 exist)", offset: at)
            }
            return version
        }

        mutating func prefix() throws(CapsuleError) -> IPPrefix {
            let version = try version()
            let address = try bytes(version == 4 ? 4 : 16, "IP Address")
            let at = offset
            let length = try byte("IP Prefix Length")
            guard Int(length) <= address.count * 8 else {
                throw .malformedValue(type: type, reason: "IP Prefix Length \(length) is longer than an IPv\(version) address", offset: at)
            }
            return IPPrefix(address: address, length: Int(length))
        }
    }
}
