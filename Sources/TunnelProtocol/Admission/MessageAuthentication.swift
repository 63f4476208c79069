import Crypto
import Foundation

/// mac1 and mac2, the two 16-byte MACs that end every handshake message (after WireGuard's
/// design, with HMAC-SHA256 truncated to 16 bytes in place of keyed BLAKE2s):
/// - mac1 = MAC(SHA256("mac1----" ‖ receiver's static public key), message up to mac1). Anyone who
///   does not know the receiver's public key cannot make one, so the receiver can drop such packets
///   before doing any Diffie-Hellman.
/// - mac2 = MAC(cookie, message up to mac2), or zeros without a cookie. Under load the responder
///   requires a valid mac2, which proves the sender can receive at its source address.
public enum MessageAuthentication {
    static let mac1Label = Array("mac1----".utf8)
    static let cookieLabel = Array("cookie--".utf8)

    /// The mac1 key for messages sent to the owner of `publicKey`.
    public static func mac1Key(for publicKey: Curve25519.KeyAgreement.PublicKey) -> SymmetricKey {
        SymmetricKey(data: Array(SHA256.hash(data: mac1Label + Array(publicKey.rawRepresentation))))
    }

    /// The key that encrypts cookie replies from the owner of `publicKey`.
    static func cookieKey(for publicKey: Curve25519.KeyAgreement.PublicKey) -> SymmetricKey {
        SymmetricKey(data: Array(SHA256.hash(data: cookieLabel + Array(publicKey.rawRepresentation))))
    }

    static func mac<Bytes: ContiguousBytes>(_ bytes: Bytes, key: SymmetricKey) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: bytes.withUnsafeBytes { Array($0) }, using: key).prefix(WireSize.mac))
    }

    /// Fills in mac1 (and mac2 when a cookie is given) at the end of a handshake message whose
    /// last 32 bytes are reserved for them.
    static func seal(_ message: inout [UInt8], mac1Key: SymmetricKey, cookie: [UInt8]?) {
        let mac1Offset = message.count - 2 * WireSize.mac
        let mac1 = mac(message[..<mac1Offset], key: mac1Key)
        message.replaceSubrange(mac1Offset..<mac1Offset + WireSize.mac, with: mac1)
        let mac2Offset = mac1Offset + WireSize.mac
        if let cookie {
            message.replaceSubrange(mac2Offset..<message.count, with: mac(message[..<mac2Offset], key: SymmetricKey(data: cookie)))
        }
    }

    /// Whether mac1 of a received handshake message is right (constant time).
    static func verifyMAC1(_ message: [UInt8], key: SymmetricKey) -> Bool {
        let mac1Offset = message.count - 2 * WireSize.mac
        return constantTimeEquals(mac(message[..<mac1Offset], key: key), message[mac1Offset..<mac1Offset + WireSize.mac])
    }

    /// Whether mac2 of a received handshake message matches `cookie` (constant time).
    static func verifyMAC2(_ message: [UInt8], cookie: [UInt8]) -> Bool {
        let mac2Offset = message.count - WireSize.mac
        return constantTimeEquals(mac(message[..<mac2Offset], key: SymmetricKey(data: cookie)), message[mac2Offset...])
    }

    /// Whether a handshake message carries a mac2 at all (initiators without a cookie send zeros).
    /// Not secret: an all-zero mac2 can be told apart in any time.
    public static func carriesMAC2(_ message: [UInt8]) -> Bool {
        guard message.count >= WireSize.mac else { return false }
        return message[(message.count - WireSize.mac)...].contains { $0 != 0 }
    }

    static func mac1(of message: [UInt8]) -> [UInt8] {
        let mac1Offset = message.count - 2 * WireSize.mac
        return Array(message[mac1Offset..<mac1Offset + WireSize.mac])
    }
}

/// Compares two byte sequences in time that depends only on their lengths.
public func constantTimeEquals<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool where A.Element == UInt8, B.Element == UInt8 {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for (x, y) in zip(a, b) { difference |= x ^ y }
    return difference == 0
}
