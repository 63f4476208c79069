/// The message types of the NetExt tunnel protocol (docs/tunnel-protocol.md). Each datagram starts
/// with the type byte followed by three zero bytes.
public enum MessageType: UInt8, Sendable, Hashable {
    case handshakeInitiation = 1
    case handshakeResponse = 2
    case cookieReply = 3
    case transportData = 4

    /// The type of a datagram, checking the reserved bytes; nil if it is not one of ours.
    public static func of<Bytes: RandomAccessCollection>(_ datagram: Bytes) -> MessageType? where Bytes.Element == UInt8, Bytes.Index == Int {
        guard datagram.count >= 4 else { return nil }
        let start = datagram.startIndex
        guard datagram[start + 1] == 0, datagram[start + 2] == 0, datagram[start + 3] == 0 else { return nil }
        return MessageType(rawValue: datagram[start])
    }
}

/// Sizes of the fixed parts of each message, in bytes.
public enum WireSize {
    public static let header = 4
    public static let index = 4
    public static let key = 32
    public static let tag = 16
    public static let mac = 16
    public static let timestamp = 12
    public static let counter = 8
    /// Initiation: header, sender index, ephemeral, encrypted static, encrypted timestamp, mac1, mac2.
    public static let initiation = header + index + key + (key + tag) + (timestamp + tag) + mac + mac
    /// Response without its payload: header, sender, receiver, ephemeral, tag, mac1, mac2.
    public static let responseFixed = header + index + index + key + tag + mac + mac
    /// The largest handshake-response payload (the server's pushed settings).
    public static let maximumResponsePayload = 1024
    /// Cookie reply: header, receiver index, 12-byte nonce, encrypted 16-byte cookie.
    public static let cookieReply = header + index + 12 + mac + tag
    /// Transport header: header, receiver index, counter.
    public static let transportHeader = header + index + counter
    /// The smallest transport message: a keepalive (empty payload, just the tag).
    public static let transportMinimum = transportHeader + tag
}
