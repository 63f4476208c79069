import TunnelProtocol

/// Why the tunnel server dropped a datagram or packet: a fixed set, so the counters (logged every
/// 30 s and shown in statistics) stay a short list whatever an attacker sends. Details that vary
/// per packet (lengths, indexes, counters) are never part of a reason.
enum ServerDropReason: String, Sendable, CaseIterable {
    case unknownMessageType = "unknown message type"
    case transportRejected = "transport: unknown receiver, authentication failed or malformed"
    case transportReplayed = "transport: replayed or too old"
    case transportNotIP = "transport: not an IP packet"
    case transportSpoofed = "transport: source address not assigned to the peer"
    case tunWriteRefused = "tun: write refused by the kernel"
    case tunUnreadable = "tun: malformed offload packet or batch full"
    case tunUnrouted = "tun: no peer or session for the destination"
    case udpSendRefused = "udp: send refused by the kernel"
    case initiationMalformed = "initiation: wrong length or reserved bytes"
    case initiationBadMAC1 = "initiation: mac1 does not match"
    case initiationQueueFull = "initiation: handshake queue full"
    case initiationCookieSent = "initiation under load without cookie (cookie sent)"
    case initiationRateLimited = "initiation under load: over the per-source rate limit"
    case initiationUndecryptable = "initiation: decryption failed"
    case initiationSmallOrderKey = "initiation: a public key of small order"
    case initiationUnknownPeer = "initiation: the static key is not a configured peer"
    case initiationReplayed = "initiation: not newer than the last one (replay)"
    case initiationFailed = "initiation: the response could not be built"

    /// The reason as a metric label: the case name in snake case (`transport_replayed`), short
    /// and stable where ``rawValue`` is a sentence.
    var metricLabel: String {
        let name = Array(String(describing: self))
        var label = ""
        for (index, character) in name.enumerated() {
            // A word starts at an upper-case letter after a lower-case one or a digit, or at the
            // last capital of an acronym followed by lower case ("MACKey" → "mac_key").
            if character.isUppercase, index > 0 {
                let previous = name[index - 1]
                let nextIsLower = index + 1 < name.count && name[index + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { label += "_" }
            }
            label += character.lowercased()
        }
        return label
    }

    /// The reason for an initiation refused with `error`.
    static func initiation(_ error: TunnelProtocolError) -> ServerDropReason {
        switch error {
        case .badLength, .unknownMessageType: .initiationMalformed
        case .badMAC1: .initiationBadMAC1
        case .cookieRequired: .initiationCookieSent
        case .decryptionFailed: .initiationUndecryptable
        case .invalidPublicKey: .initiationSmallOrderKey
        case .unknownPeer: .initiationUnknownPeer
        case .replayedInitiation: .initiationReplayed
        case .replayedCounter, .unknownReceiver, .sessionExpired, .badPayload: .initiationFailed
        }
    }
}
