import FlowInspection
import Crypto
import Foundation
import CryptoExtras
import NetExtCore

/// Opens a QUIC version 1 client's Initial packets, whose keys anyone can derive from the
/// destination connection ID (RFC 9001 §5.2), to read the CRYPTO frames that carry its TLS
/// ClientHello — so the content filter learns a QUIC flow's server name as it does a TLS one.
/// Steps: the long header (RFC 9000 §17.2.2), initial secrets by HKDF-SHA256 with the version 1
/// salt and HKDF-Expand-Label (RFC 8446 §7.1), header protection removed with AES-128 on a
/// 16-byte sample (RFC 9001 §5.4.1, §5.4.3), the payload opened with AES-128-GCM (§5.3), and
/// its frames read (PADDING, PING, ACK, CRYPTO, CONNECTION_CLOSE: the frames an Initial may
/// carry, RFC 9000 §12.4). Anything else — another version, a short header, a packet that does
/// not open — gives nil: the flow is judged without a name.
public enum QUICInitialReader {
    /// RFC 9001 §5.2.
    static let initialSalt: [UInt8] = [
        0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
    ]

    /// The client's Initial keys for a destination connection ID.
    struct Keys {
        var key: SymmetricKey
        var iv: [UInt8]
        var headerProtection: SymmetricKey
    }

    static func clientKeys(destinationConnectionID: [UInt8]) -> Keys {
        let initial = HKDF<SHA256>.extract(inputKeyMaterial: SymmetricKey(data: destinationConnectionID), salt: initialSalt)
        let client = expandLabel(SymmetricKey(data: Array(initial)), "client in", length: 32)
        return Keys(
            key: SymmetricKey(data: expandLabel(client, "quic key", length: 16)),
            iv: expandLabel(client, "quic iv", length: 12),
            headerProtection: SymmetricKey(data: expandLabel(client, "quic hp", length: 16)))
    }

    /// HKDF-Expand-Label with an empty context (RFC 8446 §7.1).
    static func expandLabel(_ secret: some ContiguousBytes, _ label: String, length: Int) -> [UInt8] {
        let full = Array("tls13 \(label)".utf8)
        let info = [UInt8(length >> 8), UInt8(length & 0xff), UInt8(full.count)] + full + [0]
        return HKDF<SHA256>.expand(pseudoRandomKey: secret, info: info, outputByteCount: length).withUnsafeBytes { Array($0) }
    }

    /// The CRYPTO frames of the client Initial packets in one UDP datagram, or nil if the
    /// datagram does not start with a version 1 Initial packet that opens.
    public static func cryptoFrames(in datagram: [UInt8]) -> [QUICCryptoStream.Frame]? {
        var frames: [QUICCryptoStream.Frame] = []
        var start = 0
        var opened = 0
        // Coalesced packets (RFC 9000 §12.2): a few at most.
        while start < datagram.count, opened < 4 {
            guard let (packetFrames, end) = openInitial(datagram, at: start) else { break }
            frames += packetFrames
            opened += 1
            start = end
        }
        return opened > 0 ? frames : nil
    }

    /// One Initial packet at `start`: its frames and where it ends.
    static func openInitial(_ datagram: [UInt8], at start: Int) -> ([QUICCryptoStream.Frame], Int)? {
        var reader = Reader(bytes: datagram, offset: start)
        guard let first = reader.byte(), first & 0xc0 == 0xc0, first & 0x30 == 0,   // long header, fixed bit, Initial
              let version = reader.bytes(4), version == [0, 0, 0, 1],
              let dcidLength = reader.byte(), dcidLength <= 20, let dcid = reader.bytes(Int(dcidLength)),
              let scidLength = reader.byte(), scidLength <= 20, reader.skip(Int(scidLength)),
              let tokenLength = reader.varint(), tokenLength <= 4096, reader.skip(Int(tokenLength)),
              let length = reader.varint(), length >= 20
        else { return nil }
        let numberOffset = reader.offset
        let end = numberOffset + Int(length)
        guard end <= datagram.count, numberOffset + 4 + 16 <= end else { return nil }
        let keys = clientKeys(destinationConnectionID: dcid)
        // Header protection: AES on the 16-byte sample 4 bytes into the packet number field.
        var mask = Array(datagram[(numberOffset + 4)..<(numberOffset + 20)])
        guard (try? AES.permute(&mask, key: keys.headerProtection)) != nil else { return nil }
        var header = Array(datagram[start..<numberOffset])
        header[0] ^= mask[0] & 0x0f
        let numberLength = Int(header[0] & 0x03) + 1
        var packetNumber: UInt64 = 0
        for index in 0..<numberLength {
            let byte = datagram[numberOffset + index] ^ mask[1 + index]
            header.append(byte)
            packetNumber = packetNumber << 8 | UInt64(byte)
        }
        var nonce = keys.iv
        for index in 0..<8 { nonce[11 - index] ^= UInt8(truncatingIfNeeded: packetNumber >> (8 * index)) }
        let payloadStart = numberOffset + numberLength
        guard end - payloadStart > 16,
              let gcmNonce = try? AES.GCM.Nonce(data: nonce),
              let box = try? AES.GCM.SealedBox(nonce: gcmNonce, ciphertext: datagram[payloadStart..<(end - 16)], tag: datagram[(end - 16)..<end]),
              let plaintext = try? AES.GCM.open(box, using: keys.key, authenticating: header)
        else { return nil }
        guard let frames = cryptoFrames(inPayload: Array(plaintext)) else { return nil }
        return (frames, end)
    }

    /// The CRYPTO frames of a decrypted Initial payload; nil for a frame an Initial may not carry
    /// or a malformed one.
    static func cryptoFrames(inPayload payload: [UInt8]) -> [QUICCryptoStream.Frame]? {
        var reader = Reader(bytes: payload, offset: 0)
        var frames: [QUICCryptoStream.Frame] = []
        while reader.offset < payload.count {
            guard let type = reader.varint() else { return nil }
            switch type {
            case 0x00, 0x01: continue                              // PADDING, PING
            case 0x02, 0x03:                                       // ACK (with ECN counts)
                guard reader.varint() != nil, reader.varint() != nil, let ranges = reader.varint(), ranges <= 256,
                      reader.varint() != nil else { return nil }
                for _ in 0..<(ranges * 2 + (type == 0x03 ? 3 : 0)) where reader.varint() == nil { return nil }
            case 0x06:                                             // CRYPTO
                guard let offset = reader.varint(), let length = reader.varint(), offset < 1 << 30,
                      let data = reader.bytes(Int(length)) else { return nil }
                frames.append(QUICCryptoStream.Frame(offset: Int(offset), data: data))
            case 0x1c:                                             // CONNECTION_CLOSE
                guard reader.varint() != nil, reader.varint() != nil, let reason = reader.varint(), reader.skip(Int(reason)) else { return nil }
            default:
                return nil
            }
        }
        return frames
    }

    struct Reader {
        let bytes: [UInt8]
        var offset: Int

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func bytes(_ count: Int) -> [UInt8]? {
            guard count >= 0, count <= bytes.count - offset else { return nil }
            defer { offset += count }
            return Array(bytes[offset..<(offset + count)])
        }

        mutating func skip(_ count: Int) -> Bool { bytes(count) != nil }

        /// A variable-length integer (RFC 9000 §16).
        mutating func varint() -> UInt64? {
            guard let first = byte() else { return nil }
            let length = 1 << Int(first >> 6)
            var value = UInt64(first & 0x3f)
            for _ in 1..<length {
                guard let next = byte() else { return nil }
                value = value << 8 | UInt64(next)
            }
            return value
        }
    }
}
