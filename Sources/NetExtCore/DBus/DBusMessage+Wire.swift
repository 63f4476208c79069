extension DBusMessage {
    /// The message's bytes with `serial` (which must not be 0); throws if a field or value breaks
    /// the specification or a field its type requires is missing.
    public func encoded(serial: UInt32) throws(DBusError) -> [UInt8] {
        try checkRequiredFields()
        var fields: [DBusValue] = []
        func add(_ field: Field, _ value: DBusValue?) {
            if let value { fields.append(.structure([.byte(field.rawValue), .variant(value)])) }
        }
        add(.path, path.map { .objectPath($0) })
        add(.interface, interface.map { .string($0) })
        add(.member, member.map { .string($0) })
        add(.errorName, errorName.map { .string($0) })
        add(.replySerial, replySerial.map { .uint32($0) })
        add(.destination, destination.map { .string($0) })
        add(.sender, sender.map { .string($0) })
        if !body.isEmpty { add(.signature, .signature(signature)) }

        var bodyWriter = DBusWriter()
        for value in body { try bodyWriter.write(value) }

        var writer = DBusWriter(startingWith: [UInt8(ascii: "l"), kind.rawValue, flags, 1])
        try writer.write(.uint32(UInt32(bodyWriter.bytes.count)))
        try writer.write(.uint32(serial))
        try writer.write(.array(element: .structure([.byte, .variant]), fields))
        writer.pad(to: 8)
        let message = writer.bytes + bodyWriter.bytes
        guard message.count <= Self.maximumLength else {
            throw .typeMismatch(expected: "a message of at most 128 MiB", found: "one of \(message.count) bytes")
        }
        return message
    }

    /// The whole length of the message whose first 16 bytes are `prefix`, read from its fixed
    /// header; throws if they are not the start of a D-Bus message.
    public static func length(ofMessageStartingWith prefix: [UInt8]) throws(DBusError) -> Int {
        guard prefix.count >= 16 else { throw .malformedMessage(offset: prefix.count, reason: "a message is at least 16 bytes") }
        let bigEndian = try byteOrder(prefix[0])
        var reader = DBusReader(bytes: prefix, offset: 4, bigEndian: bigEndian)
        let bodyLength = Int(try reader.uint32())
        _ = try reader.uint32()
        let fieldsLength = Int(try reader.uint32())
        let headerLength = (16 + fieldsLength + 7) & ~7
        let total = headerLength + bodyLength
        guard fieldsLength <= DBusWriter.maximumArrayLength, total <= maximumLength else {
            throw .malformedMessage(offset: 4, reason: "the message claims \(total) bytes, over the 128 MiB limit")
        }
        return total
    }

    /// Decodes one whole message; throws naming the offset at fault.
    public init(decoding bytes: [UInt8]) throws(DBusError) {
        let total = try Self.length(ofMessageStartingWith: bytes)
        guard bytes.count == total else {
            throw .malformedMessage(offset: min(bytes.count, total), reason: "the message is \(bytes.count) bytes where its header says \(total)")
        }
        let bigEndian = try Self.byteOrder(bytes[0])
        guard let kind = Kind(rawValue: bytes[1]) else {
            throw .malformedMessage(offset: 1, reason: "message type \(bytes[1]) is not one of 1–4")
        }
        guard bytes[3] == 1 else { throw .malformedMessage(offset: 3, reason: "protocol version \(bytes[3]) is not 1") }
        self.init(kind: kind)
        flags = bytes[2]
        var reader = DBusReader(bytes: bytes, offset: 4, bigEndian: bigEndian)
        let bodyLength = Int(try reader.uint32())
        serial = try reader.uint32()
        guard serial != 0 else { throw .malformedMessage(offset: 8, reason: "the serial is 0") }
        let fields = try reader.read(.array(.structure([.byte, .variant])))
        var signature = ""
        for field in fields.arrayValue ?? [] {
            guard case .structure(let pair) = field, case .byte(let code) = pair[0] else { continue }
            let value = pair[1].unwrapped
            switch Field(rawValue: code) {
            case .path: path = try Self.expect(value, .objectPath, code)
            case .interface: interface = try Self.expect(value, .string, code)
            case .member: member = try Self.expect(value, .string, code)
            case .errorName: errorName = try Self.expect(value, .string, code)
            case .destination: destination = try Self.expect(value, .string, code)
            case .sender: sender = try Self.expect(value, .string, code)
            case .signature: signature = try Self.expect(value, .signature, code)
            case .replySerial:
                guard case .uint32(let number) = value else { throw Self.fieldFault(code, value) }
                replySerial = number
            case .unixFDs, nil: break  // unknown fields are ignored, as the specification asks
            }
        }
        try reader.skipPadding(to: 8)
        let bodyStart = reader.offset
        guard bodyStart + bodyLength == bytes.count else {
            throw .malformedMessage(offset: bodyStart, reason: "the body length disagrees with the message length")
        }
        var bodyReader = DBusReader(bytes: bytes, offset: bodyStart, bigEndian: bigEndian)
        for type in try DBusType.parseList(signature) { body.append(try bodyReader.read(type)) }
        guard bodyReader.isAtEnd else {
            throw .malformedMessage(offset: bodyReader.offset, reason: "bytes follow the values the signature \"\(signature)\" names")
        }
        try checkRequiredFields()
    }

    private func checkRequiredFields() throws(DBusError) {
        let missing: String? = switch kind {
        case .methodCall: path == nil ? "a path" : member == nil ? "a member" : nil
        case .signal: path == nil ? "a path" : interface == nil ? "an interface" : member == nil ? "a member" : nil
        case .methodReturn: replySerial == nil ? "a reply serial" : nil
        case .error: errorName == nil ? "an error name" : replySerial == nil ? "a reply serial" : nil
        }
        if let missing { throw .malformedMessage(offset: 12, reason: "a message of type \(kind) lacks \(missing)") }
        if let interface, !DBusNames.isInterfaceName(interface) {
            throw .malformedMessage(offset: 12, reason: "\"\(interface)\" is not an interface name")
        }
        if let member, !DBusNames.isMemberName(member) {
            throw .malformedMessage(offset: 12, reason: "\"\(member)\" is not a member name")
        }
    }

    private static func byteOrder(_ byte: UInt8) throws(DBusError) -> Bool {
        switch byte {
        case UInt8(ascii: "l"): return false
        case UInt8(ascii: "B"): return true
        default: throw .malformedMessage(offset: 0, reason: "the byte order is \(byte), neither 'l' nor 'B'")
        }
    }

    private static func expect(_ value: DBusValue, _ type: DBusType, _ code: UInt8) throws(DBusError) -> String {
        guard value.type == type, let text = value.stringValue else { throw fieldFault(code, value) }
        return text
    }

    private static func fieldFault(_ code: UInt8, _ value: DBusValue) -> DBusError {
        .malformedMessage(offset: 12, reason: "header field \(code) holds a value of type \(value.type.signature)")
    }
}
