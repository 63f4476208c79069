import Crypto
import Foundation
import NetExtCore

/// The long-term credentials an issuer accepts before it signs (the URL filter's
/// `pirAuthenticationToken`, presented as `Authorization: Bearer …`: the attestation step).
/// Only SHA-256 digests are kept in memory; a lookup compares against every digest in
/// constant time and names the match by an opaque index, never by the credential.
public struct BearerCredentials: Sendable {
    let digests: [[UInt8]]

    public init(credentials: [String]) {
        digests = credentials.map { Array(SHA256.hash(data: Array($0.utf8))) }
    }

    /// One credential per line; blank lines and lines starting with `#` are skipped. A line
    /// that is too short to be a credential is refused by number.
    public init(file path: String) throws(PrivacyServiceError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw .file(path: path, reason: "cannot read") }
        var credentials: [String] = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard text.utf8.count >= 16 else { throw .file(path: path, reason: "line \(number + 1): a credential needs at least 16 characters") }
            credentials.append(text)
        }
        guard !credentials.isEmpty else { throw .file(path: path, reason: "no credentials") }
        self.init(credentials: credentials)
    }

    public var count: Int { digests.count }

    /// A number that names the credential at `index` whatever its line in the file (the first
    /// eight bytes of its digest): rate-limit buckets are kept by it, so a reload that adds or
    /// removes other lines leaves every remaining credential its own bucket.
    public func identity(at index: Int) -> Int {
        digests[index].prefix(8).reduce(0) { ($0 << 8) | Int($1) }
    }

    /// The index of the credential in an `Authorization: Bearer …` value, or `nil`.
    public func match(authorization: String?) -> Int? {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let digest = Array(SHA256.hash(data: Array(parts[1].trimmingCharacters(in: .whitespaces).utf8)))
        var found: Int?
        for (index, candidate) in digests.enumerated() where ConstantTime.equal(candidate, digest) && found == nil {
            found = index
        }
        return found
    }
}
