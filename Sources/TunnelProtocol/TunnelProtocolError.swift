/// Why a tunnel-protocol message was refused. Every case names what was wrong; none carries key
/// material. Malformed and unauthenticated packets are dropped and counted by the caller.
public enum TunnelProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The datagram is shorter or longer than its type allows.
    case badLength(type: UInt8, length: Int, expected: String)
    /// The first byte is not a known message type, or reserved bytes are not zero.
    case unknownMessageType(UInt8)
    /// mac1 does not match: the sender does not know our public key (or the packet was mangled).
    case badMAC1
    /// The server is under load and the message carried no valid cookie (mac2).
    case cookieRequired
    /// Decryption failed (wrong keys, tampering, or a packet for another session).
    case decryptionFailed(stage: String)
    /// The initiator's static key is not one of the configured peers.
    case unknownPeer
    /// A handshake initiation not newer than the last one from this peer (replayed).
    case replayedInitiation
    /// A transport counter already seen or too old for the replay window.
    case replayedCounter(UInt64)
    /// No session matches the receiver index.
    case unknownReceiver(UInt32)
    /// The session's keys are too old or have been used too often; a new handshake is needed.
    case sessionExpired
    /// An X25519 result was all zeros (a small-order public key).
    case invalidPublicKey
    /// The handshake payload could not be decoded.
    case badPayload(String)

    public var description: String {
        switch self {
        case .badLength(let type, let length, let expected): "message type \(type): length \(length), expected \(expected)"
        case .unknownMessageType(let type): "unknown message type \(type)"
        case .badMAC1: "mac1 does not match"
        case .cookieRequired: "under load: a valid cookie (mac2) is required"
        case .decryptionFailed(let stage): "decryption failed (\(stage))"
        case .unknownPeer: "the initiator's static key is not a configured peer"
        case .replayedInitiation: "handshake initiation is not newer than the last one (replay)"
        case .replayedCounter(let counter): "counter \(counter) was already received or is outside the replay window"
        case .unknownReceiver(let index): "no session with receiver index \(index)"
        case .sessionExpired: "the session's keys expired; a new handshake is needed"
        case .invalidPublicKey: "a public key of small order"
        case .badPayload(let reason): "handshake payload: \(reason)"
        }
    }
}
