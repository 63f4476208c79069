import Crypto
import Foundation

/// The responder's side of the cookie mechanism: when it is under load it answers initiations
/// that lack a valid mac2 with a cookie reply instead of doing the handshake. A cookie is
/// MAC(secret, source address), with a random secret replaced every two minutes, so it is cheap
/// to check, useless from another address, and never stored per client.
public struct CookieGenerator: Sendable {
    public static let secretLifetime: TimeInterval = 120

    private let cookieKey: SymmetricKey
    private var secret: SymmetricKey
    private var previousSecret: SymmetricKey?
    private var secretCreated: Date

    public init(responderPublicKey: Curve25519.KeyAgreement.PublicKey, now: Date = Date()) {
        cookieKey = MessageAuthentication.cookieKey(for: responderPublicKey)
        secret = SymmetricKey(size: .bits256)
        secretCreated = now
    }

    private mutating func rotateIfNeeded(now: Date) {
        if now.timeIntervalSince(secretCreated) >= Self.secretLifetime {
            previousSecret = now.timeIntervalSince(secretCreated) < 2 * Self.secretLifetime ? secret : nil
            secret = SymmetricKey(size: .bits256)
            secretCreated = now
        }
    }

    /// The secrets in force at `now` (rotated first if due): what the checks and replies below
    /// need, as a value that several handshake threads can use outside any lock.
    public mutating func secrets(now: Date = Date()) -> Secrets {
        rotateIfNeeded(now: now)
        return Secrets(cookieKey: cookieKey, current: secret, previous: previousSecret)
    }

    /// The cookie for a source address (its bytes: address then port).
    public mutating func cookie(for source: [UInt8], now: Date = Date()) -> [UInt8] {
        secrets(now: now).cookie(for: source)
    }

    /// Whether a handshake message from `source` carries a valid mac2 (current or previous secret).
    public mutating func hasValidMAC2(_ message: [UInt8], source: [UInt8], now: Date = Date()) -> Bool {
        secrets(now: now).hasValidMAC2(message, source: source)
    }

    /// A cookie reply to a handshake message from `source`.
    public mutating func reply(to message: [UInt8], receiverIndex: UInt32, source: [UInt8], now: Date = Date()) throws -> [UInt8] {
        try secrets(now: now).reply(to: message, receiverIndex: receiverIndex, source: source)
    }

    /// The keys of one moment: the cookie key, the current secret and the one before it.
    public struct Secrets: Sendable {
        let cookieKey: SymmetricKey
        let current: SymmetricKey
        let previous: SymmetricKey?

        /// The cookie for a source address (its bytes: address then port).
        public func cookie(for source: [UInt8]) -> [UInt8] {
            MessageAuthentication.mac(source, key: current)
        }

        /// Whether a handshake message from `source` carries a valid mac2 (current or previous
        /// secret). A message whose mac2 is all zeros carries none and costs no MAC.
        public func hasValidMAC2(_ message: [UInt8], source: [UInt8]) -> Bool {
            guard MessageAuthentication.carriesMAC2(message) else { return false }
            if MessageAuthentication.verifyMAC2(message, cookie: MessageAuthentication.mac(source, key: current)) { return true }
            if let previous, MessageAuthentication.verifyMAC2(message, cookie: MessageAuthentication.mac(source, key: previous)) { return true }
            return false
        }

        /// A cookie reply to a handshake message from `source`: the cookie encrypted under the
        /// cookie key with a random nonce, authenticated with the message's mac1.
        public func reply(to message: [UInt8], receiverIndex: UInt32, source: [UInt8]) throws -> [UInt8] {
            let nonce = ChaChaPoly.Nonce()
            let sealed = try ChaChaPoly.seal(cookie(for: source), using: cookieKey, nonce: nonce, authenticating: MessageAuthentication.mac1(of: message))
            var reply: [UInt8] = [MessageType.cookieReply.rawValue, 0, 0, 0]
            reply.appendBigEndian(receiverIndex)
            reply.append(contentsOf: nonce)
            reply.append(contentsOf: sealed.ciphertext)
            reply.append(contentsOf: sealed.tag)
            return reply
        }
    }

    /// The initiator's side: decrypts a cookie reply to the message whose mac1 is `sentMAC1`.
    public static func openReply(_ reply: [UInt8], responderPublicKey: Curve25519.KeyAgreement.PublicKey, sentMAC1: [UInt8]) throws(TunnelProtocolError) -> [UInt8] {
        guard reply.count == WireSize.cookieReply else {
            throw .badLength(type: MessageType.cookieReply.rawValue, length: reply.count, expected: "\(WireSize.cookieReply)")
        }
        do {
            let nonce = try ChaChaPoly.Nonce(data: reply.bytes(at: 8, count: 12))
            let box = try ChaChaPoly.SealedBox(nonce: nonce, ciphertext: reply.bytes(at: 20, count: 16), tag: reply.bytes(at: 36, count: 16))
            return Array(try ChaChaPoly.open(box, using: MessageAuthentication.cookieKey(for: responderPublicKey), authenticating: sentMAC1))
        } catch {
            throw .decryptionFailed(stage: "cookie reply")
        }
    }
}
