import Foundation
import TunnelProtocol

/// What `netext-server tunnel show` prints: the server and each peer as `wg show` gives a
/// WireGuard interface — endpoint, latest handshake, transfer — read live from the running
/// server over its status socket (`TunnelServerStatusSocket`). Never keys other than public ones,
/// never payloads.
public struct TunnelServerStatus: Sendable, Hashable, Codable {
    public struct Peer: Sendable, Hashable, Codable {
        public var name: String
        public var publicKey: String
        /// Where the peer was last heard from (nil: never).
        public var endpoint: String?
        /// The addresses assigned to it (`allowed ips` in WireGuard's words).
        public var addresses: [String]
        public var lastHandshake: Date?
        /// Handshakes completed with the peer since the server started (connections and rekeys).
        public var handshakes: UInt64
        /// Inner bytes and packets, as the server counts them (received from the peer, sent to it).
        public var bytesReceived: UInt64
        public var bytesSent: UInt64
        public var packetsReceived: UInt64
        public var packetsSent: UInt64
        /// Whether the peer has a session the server can send on now.
        public var hasSession: Bool
    }

    public var listen: String
    public var interface: String
    public var publicKey: String
    /// When the server started serving.
    public var startedAt: Date
    public var peers: [Peer]
    /// Datagrams and packets dropped, by reason (only reasons seen).
    public var dropped: [String: UInt64]
}

extension TunnelServer {
    /// The server's status now.
    public func status() -> TunnelServerStatus {
        let interface = resources.withLock { $0.interface }
        return table.withLock { table in
            TunnelServerStatus(
                listen: listeningAddress?.description ?? configuration.listen, interface: interface, publicKey: publicKey, startedAt: startedAt,
                peers: table.peers.map { peer in
                    TunnelServerStatus.Peer(
                        name: peer.name, publicKey: Data(peer.publicKey).base64EncodedString(),
                        endpoint: peer.endpoint?.description, addresses: peer.addresses.map(\.description),
                        lastHandshake: peer.lastHandshake, handshakes: peer.handshakes, bytesReceived: peer.bytesIn, bytesSent: peer.bytesOut,
                        packetsReceived: peer.packetsIn, packetsSent: peer.packetsOut, hasSession: peer.current != nil)
                },
                dropped: Dictionary(uniqueKeysWithValues: table.dropped.map { ($0.key.rawValue, $0.value) }))
        }
    }
}
