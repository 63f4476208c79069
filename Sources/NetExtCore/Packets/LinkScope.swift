extension IPPacketInfo {
    /// Whether a packet belongs to the link it was sent on and must never enter a tunnel: the
    /// kernel sends these on every interface with an address of the family (router and neighbour
    /// solicitations, MLD reports, link-local multicast), whatever the routes say. A tunnel
    /// carrying them only wastes a round of encryption, and the server must drop them anyway.
    ///
    /// - IPv6: a link-local source or destination (`fe80::/10`, RFC 4291 §2.5.6), or a multicast
    ///   destination of interface-local or link-local scope (`ffX1::`, `ffX2::`; the scope is the
    ///   low four bits of the second byte, RFC 4291 §2.7). Multicast of a wider scope is left to
    ///   the routes.
    /// - IPv4: a link-local source or destination (`169.254.0.0/16`, RFC 3927), or a destination
    ///   in the Local Network Control Block (`224.0.0.0/24`, never forwarded, RFC 5771 §4).
    ///
    /// Reads only the addresses' first bytes: for the data path, allocation-free. A packet too
    /// short to hold its addresses is not judged here (the caller's length check refuses it).
    @inlinable
    public static func isLinkScoped(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard packet.count >= 20 else { return false }
        switch packet[0] >> 4 {
        case 6:
            guard packet.count >= 40 else { return false }
            let sourceLinkLocal = packet[8] == 0xfe && packet[9] & 0xc0 == 0x80
            let destinationLinkLocal = packet[24] == 0xfe && packet[25] & 0xc0 == 0x80
            let scope = packet[25] & 0x0f
            let destinationLocalMulticast = packet[24] == 0xff && (scope == 1 || scope == 2)
            return sourceLinkLocal || destinationLinkLocal || destinationLocalMulticast
        case 4:
            let sourceLinkLocal = packet[12] == 169 && packet[13] == 254
            let destinationLinkLocal = packet[16] == 169 && packet[17] == 254
            let controlBlock = packet[16] == 224 && packet[17] == 0 && packet[18] == 0
            return sourceLinkLocal || destinationLinkLocal || controlBlock
        default:
            return false
        }
    }
}
