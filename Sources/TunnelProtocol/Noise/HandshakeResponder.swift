import Crypto
import Foundation

/// The server's side of the handshake. `consume` checks mac1 (cheap, before any Diffie-Hellman),
/// then decrypts the initiator's static key and timestamp; the caller decides whether that key is
/// a configured peer and the timestamp is newer than the last one, and then calls `respond`.
public enum HandshakeResponder {
    /// A verified initiation, waiting for the caller's decision.
    public struct ReceivedInitiation: Sendable {
        public let initiatorStaticKey: Curve25519.KeyAgreement.PublicKey
        public let initiatorIndex: UInt32
        public let timestamp: HandshakeTimestamp
        fileprivate let state: NoiseSymmetricState
        fileprivate let initiatorEphemeral: Curve25519.KeyAgreement.PublicKey

        /// The response carrying `assignment`, and the responder's transport session.
        public func respond(
            senderIndex: UInt32, assignment: TunnelAssignment, timing: TunnelTiming = .standard, now: Date = Date(),
            ephemeralKey: Curve25519.KeyAgreement.PrivateKey = Curve25519.KeyAgreement.PrivateKey()
        ) throws(TunnelProtocolError) -> (response: [UInt8], session: TransportSession) {
            var state = self.state
            var message: [UInt8] = [MessageType.handshakeResponse.rawValue, 0, 0, 0]
            message.appendBigEndian(senderIndex)
            message.appendBigEndian(initiatorIndex)
            // <- e
            let ephemeralPublic = Array(ephemeralKey.publicKey.rawRepresentation)
            state.mixHash(ephemeralPublic)
            message.append(contentsOf: ephemeralPublic)
            // ee, se
            state.mixKey(try TunnelKeys.agree(ephemeralKey, initiatorEphemeral))
            state.mixKey(try TunnelKeys.agree(ephemeralKey, initiatorStaticKey))
            do {
                message.append(contentsOf: try state.encryptAndHash(try assignment.encoded()))
            } catch let error as TunnelProtocolError {
                throw error
            } catch {
                throw .decryptionFailed(stage: "response seal")
            }
            message.append(contentsOf: [UInt8](repeating: 0, count: 2 * WireSize.mac))
            MessageAuthentication.seal(&message, mac1Key: MessageAuthentication.mac1Key(for: initiatorStaticKey), cookie: nil)
            let keys = state.split()
            let session = TransportSession(
                localIndex: senderIndex, remoteIndex: initiatorIndex, isInitiator: false,
                sendKey: keys.responderToInitiator, receiveKey: keys.initiatorToResponder, created: now, timing: timing)
            return (message, session)
        }
    }

    /// Checks an initiation's length and mac1; a cheap filter to run before `consume`.
    public static func precheck(_ message: [UInt8], mac1Key: SymmetricKey) throws(TunnelProtocolError) {
        guard message.count == WireSize.initiation else {
            throw .badLength(type: MessageType.handshakeInitiation.rawValue, length: message.count, expected: "\(WireSize.initiation)")
        }
        guard MessageType.of(message) == .handshakeInitiation else { throw .unknownMessageType(message[0]) }
        guard MessageAuthentication.verifyMAC1(message, key: mac1Key) else { throw .badMAC1 }
    }

    /// Verifies and decrypts an initiation addressed to `staticKey`. A responder that keeps its
    /// mac1 key passes it (`MessageAuthentication.mac1Key(for:)` of its public key) instead of
    /// having it derived again for every initiation.
    public static func consume(
        _ message: [UInt8], staticKey: Curve25519.KeyAgreement.PrivateKey, mac1Key: SymmetricKey? = nil
    ) throws(TunnelProtocolError) -> ReceivedInitiation {
        try precheck(message, mac1Key: mac1Key ?? MessageAuthentication.mac1Key(for: staticKey.publicKey))
        var state = NoiseSymmetricState(prologue: HandshakeInitiator.prologue)
        state.mixHash(staticKey.publicKey.rawRepresentation)
        let initiatorIndex = message.readBigEndianUInt32(at: 4)
        // -> e
        let ephemeralBytes = message.bytes(at: 8, count: WireSize.key)
        guard let initiatorEphemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralBytes) else { throw .invalidPublicKey }
        state.mixHash(ephemeralBytes)
        // es
        state.mixKey(try TunnelKeys.agree(staticKey, initiatorEphemeral))
        // s
        let staticBytes = try state.decryptAndHash(message.bytes(at: 40, count: WireSize.key + WireSize.tag), stage: "initiator static key")
        guard let initiatorStatic = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: staticBytes) else { throw .invalidPublicKey }
        // ss
        state.mixKey(try TunnelKeys.agree(staticKey, initiatorStatic))
        let timestampBytes = try state.decryptAndHash(message.bytes(at: 88, count: WireSize.timestamp + WireSize.tag), stage: "timestamp")
        return ReceivedInitiation(
            initiatorStaticKey: initiatorStatic, initiatorIndex: initiatorIndex,
            timestamp: HandshakeTimestamp(bytes: timestampBytes), state: state, initiatorEphemeral: initiatorEphemeral)
    }
}
