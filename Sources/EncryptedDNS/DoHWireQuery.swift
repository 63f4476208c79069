import NetExtCore

/// A query as DNS over HTTPS (and Oblivious DoH inside its seal) sends it: identifier 0 (RFC 8484
/// §4.1, so caches can share answers), padded to 128-byte blocks (RFC 8467 §4.1); and the check
/// of the answer against it, with the client's identifier put back.
struct DoHWireQuery {
    let clientID: UInt16
    let wire: [UInt8]

    init(_ query: [UInt8]) throws(EncryptedDNSError) {
        guard let id = DNSMessageEditing.id(of: query) else { throw .malformedQuery("shorter than a DNS header") }
        clientID = id
        do { wire = try DNSMessageEditing.padded(DNSMessageEditing.replacingID(of: query, with: 0)) } catch {
            throw .malformedQuery("\(error)")
        }
    }

    /// The answer under the client's identifier, or why it is not the response to this question.
    func answer(_ bytes: [UInt8], server: String) throws(EncryptedDNSError) -> [UInt8] {
        if let reason = DNSMessageEditing.mismatch(of: bytes, to: wire) { throw .mismatchedAnswer(server: server, reason: reason) }
        return DNSMessageEditing.replacingID(of: bytes, with: clientID)
    }
}
