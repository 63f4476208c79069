import Crypto

/// A token challenge (RFC 9577 §2.1.1): token_type(2) ‖ issuer_name<1..2^16−1> ‖
/// redemption_context<0..32> ‖ origin_info<0..2^16−1> (origin names joined by ",").
public struct TokenChallenge: Sendable, Equatable {
    public var tokenType: UInt16
    public var issuerName: String
    /// Empty or 32 bytes.
    public var redemptionContext: [UInt8]
    public var originInfo: [String]

    public init(tokenType: UInt16 = PrivateToken.blindRSAType, issuerName: String, redemptionContext: [UInt8] = [], originInfo: [String] = []) {
        self.tokenType = tokenType
        self.issuerName = issuerName
        self.redemptionContext = redemptionContext
        self.originInfo = originInfo
    }

    public func encoded() -> [UInt8] {
        var out = PrivateToken.bigEndian(tokenType)
        let issuer = Array(issuerName.utf8)
        out += PrivateToken.bigEndian(UInt16(issuer.count)) + issuer
        out += [UInt8(redemptionContext.count)] + redemptionContext
        let origins = Array(originInfo.joined(separator: ",").utf8)
        out += PrivateToken.bigEndian(UInt16(origins.count)) + origins
        return out
    }

    public init(decoding bytes: [UInt8]) throws(PrivacyPassError) {
        var reader = ByteReader(bytes, what: "token challenge")
        tokenType = try reader.uint16()
        let issuer = try reader.bytes(Int(try reader.uint16()))
        guard !issuer.isEmpty else { throw .malformed(what: "token challenge", reason: "empty issuer name") }
        issuerName = String(decoding: issuer, as: UTF8.self)
        let contextLength = Int(try reader.uint8())
        guard contextLength == 0 || contextLength == 32 else {
            throw .malformed(what: "token challenge", reason: "redemption context of \(contextLength) bytes (0 or 32)")
        }
        redemptionContext = try reader.bytes(contextLength)
        let origins = try reader.bytes(Int(try reader.uint16()))
        originInfo = origins.isEmpty ? [] : String(decoding: origins, as: UTF8.self).split(separator: ",").map(String.init)
        try reader.finish()
    }

    /// SHA-256 of the encoded challenge: what a token commits to.
    public var digest: [UInt8] { Array(SHA256.hash(data: encoded())) }
}

/// Reads big-endian fields, naming the structure and offset when input runs out.
struct ByteReader {
    let bytes: [UInt8]
    let what: String
    var offset = 0

    init(_ bytes: [UInt8], what: String) {
        self.bytes = bytes
        self.what = what
    }

    mutating func bytes(_ count: Int) throws(PrivacyPassError) -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else {
            throw .malformed(what: what, reason: "needs \(count) bytes at offset \(offset), has \(bytes.count - offset)")
        }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func uint8() throws(PrivacyPassError) -> UInt8 { try bytes(1)[0] }

    mutating func uint16() throws(PrivacyPassError) -> UInt16 {
        let b = try bytes(2)
        return UInt16(b[0]) << 8 | UInt16(b[1])
    }

    func finish() throws(PrivacyPassError) {
        guard offset == bytes.count else { throw .malformed(what: what, reason: "\(bytes.count - offset) trailing bytes at offset \(offset)") }
    }
}
