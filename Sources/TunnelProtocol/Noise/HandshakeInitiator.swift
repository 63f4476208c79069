import Crypto
import Foundation

/// The client's side of the handshake, Noise IK (`-> e, es, s, ss` / `<- e, ee, se`), over
/// X25519, ChaCha20-Poly1305 and SHA-256. The initiator knows the server's static key in advance;
/// its own static key travels encrypted (identity hiding), and the ephemeral keys give forward
/// secrecy.
///
/// Initiation (148 bytes): type 1, three zero bytes, sender index (4), ephemeral public key (32),
/// encrypted static key (32 + 16), encrypted timestamp (12 + 16), mac1 (16), mac2 (16).
public struct HandshakeInitiator: Sendable {
    public let senderIndex: UInt32
    /// The initiation to send (already carrying mac1, and mac2 if a cookie was given).
    public let initiation: [UInt8]
    private let staticKey: Curve25519.KeyAgreement.PrivateKey
    private let ephemeralKey: Curve25519.KeyAgreement.PrivateKey
    private let responderPublicKey: Curve25519.KeyAgreement.PublicKey
    private let state: NoiseSymmetricState
    private let timing: TunnelTiming

    public static let prologue = Array("NetExt tunnel v1".utf8)

    public init(
        staticKey: Curve25519.KeyAgreement.PrivateKey,
        responderPublicKey: Curve25519.KeyAgreement.PublicKey,
        senderIndex: UInt32,
        timestamp: HandshakeTimestamp = HandshakeTimestamp(date: Date()),
        cookie: [UInt8]? = nil,
        timing: TunnelTiming = .standard,
        ephemeralKey: Curve25519.KeyAgreement.PrivateKey = Curve25519.KeyAgreement.PrivateKey()
    ) throws(TunnelProtocolError) {
        var state = NoiseSymmetricState(prologue: Self.prologue)
        state.mixHash(responderPublicKey.rawRepresentation)
        var message: [UInt8] = [MessageType.handshakeInitiation.rawValue, 0, 0, 0]
        message.appendBigEndian(senderIndex)
        // -> e
        let ephemeralPublic = Array(ephemeralKey.publicKey.rawRepresentation)
        state.mixHash(ephemeralPublic)
        message.append(contentsOf: ephemeralPublic)
        // es
        state.mixKey(try TunnelKeys.agree(ephemeralKey, responderPublicKey))
        // s
        do {
            message.append(contentsOf: try state.encryptAndHash(Array(staticKey.publicKey.rawRepresentation)))
            // ss
            state.mixKey(try TunnelKeys.agree(staticKey, responderPublicKey))
            // payload: the timestamp
            message.append(contentsOf: try state.encryptAndHash(timestamp.bytes))
        } catch let error as TunnelProtocolError {
            throw error
        } catch {
            throw .decryptionFailed(stage: "initiation seal")
        }
        message.append(contentsOf: [UInt8](repeating: 0, count: 2 * WireSize.mac))
        MessageAuthentication.seal(&message, mac1Key: MessageAuthentication.mac1Key(for: responderPublicKey), cookie: cookie)
        self.senderIndex = senderIndex
        self.initiation = message
        self.staticKey = staticKey
        self.ephemeralKey = ephemeralKey
        self.responderPublicKey = responderPublicKey
        self.state = state
        self.timing = timing
    }

    /// The mac1 this initiation carried (a cookie reply is authenticated with it).
    public var sentMAC1: [UInt8] { MessageAuthentication.mac1(of: initiation) }

    /// Completes the handshake with the server's response: the transport session and the settings
    /// the server pushed.
    public func consumeResponse(_ response: [UInt8], now: Date = Date()) throws(TunnelProtocolError) -> (session: TransportSession, assignment: TunnelAssignment) {
        guard response.count >= WireSize.responseFixed, response.count <= WireSize.responseFixed + WireSize.maximumResponsePayload else {
            throw .badLength(type: MessageType.handshakeResponse.rawValue, length: response.count, expected: "\(WireSize.responseFixed)...\(WireSize.responseFixed + WireSize.maximumResponsePayload)")
        }
        guard MessageType.of(response) == .handshakeResponse else { throw .unknownMessageType(response[0]) }
        guard response.readBigEndianUInt32(at: 8) == senderIndex else { throw .unknownReceiver(response.readBigEndianUInt32(at: 8)) }
        guard MessageAuthentication.verifyMAC1(response, key: MessageAuthentication.mac1Key(for: staticKey.publicKey)) else { throw .badMAC1 }
        var state = self.state
        let responderIndex = response.readBigEndianUInt32(at: 4)
        // <- e
        let ephemeralBytes = response.bytes(at: 12, count: WireSize.key)
        guard let responderEphemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: ephemeralBytes) else { throw .invalidPublicKey }
        state.mixHash(ephemeralBytes)
        // ee, se
        state.mixKey(try TunnelKeys.agree(ephemeralKey, responderEphemeral))
        state.mixKey(try TunnelKeys.agree(staticKey, responderEphemeral))
        let payloadEnd = response.count - 2 * WireSize.mac
        let payload = try state.decryptAndHash(Array(response[44..<payloadEnd]), stage: "response payload")
        let assignment = try TunnelAssignment.decode(payload)
        let keys = state.split()
        let session = TransportSession(
            localIndex: senderIndex, remoteIndex: responderIndex, isInitiator: true,
            sendKey: keys.initiatorToResponder, receiveKey: keys.responderToInitiator, created: now, timing: timing)
        return (session, assignment)
    }
}
