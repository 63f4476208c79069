/// Types that hold key material describe themselves without it, so that logging or printing
/// one (or a test failure that dumps it) never reveals a key.
extension NoiseSymmetricState: CustomStringConvertible, CustomReflectable {
    var description: String { "NoiseSymmetricState(<redacted>)" }
    var customMirror: Mirror { Mirror(self, children: [:]) }
}

extension TransportSession: CustomStringConvertible, CustomReflectable {
    public var description: String {
        "TransportSession(local: \(localIndex), remote: \(remoteIndex), initiator: \(isInitiator), sent: \(sendCounter), keys: <redacted>)"
    }
    public var customMirror: Mirror { Mirror(self, children: ["localIndex": localIndex, "remoteIndex": remoteIndex, "sendCounter": sendCounter]) }
}

extension HandshakeInitiator: CustomStringConvertible, CustomReflectable {
    public var description: String { "HandshakeInitiator(senderIndex: \(senderIndex), keys: <redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: ["senderIndex": senderIndex]) }
}

extension HandshakeResponder.ReceivedInitiation: CustomStringConvertible, CustomReflectable {
    public var description: String { "ReceivedInitiation(initiatorIndex: \(initiatorIndex), keys: <redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: ["initiatorIndex": initiatorIndex]) }
}
