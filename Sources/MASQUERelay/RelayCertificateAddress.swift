import NIOSSL

/// Whether a certificate is for an IP address: one of its subjectAltName entries of type
/// iPAddress holds the address's 4 or 16 bytes (RFC 5280 §4.2.1.6; RFC 6125 §6.2.1 has a
/// reference identity that is an address matched only against those entries, never the common
/// name). Used for a relay reached through another by address, whose peer is no address.
enum RelayCertificateAddress {
    static func covers(_ certificate: NIOSSLCertificate, address: [UInt8]) -> Bool {
        guard address.count == 4 || address.count == 16 else { return false }
        for name in certificate._subjectAlternativeNames() where name.nameType == .ipAddress {
            if name.contents.elementsEqual(address) { return true }
        }
        return false
    }
}
