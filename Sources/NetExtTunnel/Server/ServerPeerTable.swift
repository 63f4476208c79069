import Crypto
import Foundation
import NetExtCore
import NetExtLinux
import TunnelProtocol

/// The tunnel server's view of its clients: who they are, what addresses they own, their current
/// sessions and where they were last heard from. Owned by `TunnelServer` behind one lock.
struct ServerPeerTable {
    struct Peer {
        let name: String
        let publicKey: [UInt8]
        /// The addresses assigned to this peer (host prefixes), used for routing and anti-spoofing.
        let addresses: [IPPrefix]
        let assignment: TunnelAssignment
        var endpoint: SocketAddress?
        /// The server address the peer last sent to; replies leave from it.
        var localAddress: LocalAddress?
        var lastTimestamp: HandshakeTimestamp?
        var current: TransportSession?
        var previous: TransportSession?
        var lastSent = Date.distantPast
        var lastReceived = Date.distantPast
        /// When the first data (not a keepalive) arrived that nothing sent has followed yet: a
        /// passive keepalive is due `keepaliveTimeout` after it. Later data does not move it (as
        /// WireGuard's keepalive timer, whitepaper §6.5), so a peer sending every few seconds
        /// still hears from the server; anything sent clears it.
        var keepaliveDue: Date?
        var lastHandshake: Date?
        var bytesIn: UInt64 = 0
        var bytesOut: UInt64 = 0
        var packetsIn: UInt64 = 0
        var packetsOut: UInt64 = 0
    }

    var peers: [Peer] = []
    /// Session index → peer position.
    var byIndex: [UInt32: Int] = [:]
    /// Assigned address bytes → peer position.
    var byAddress: [[UInt8]: Int] = [:]
    /// Public key bytes → peer position.
    var byKey: [[UInt8]: Int] = [:]
    var dropped: [ServerDropReason: UInt64] = [:]

    mutating func add(_ peer: Peer) {
        let position = peers.count
        peers.append(peer)
        byKey[peer.publicKey] = position
        for address in peer.addresses { byAddress[address.address] = position }
    }

    mutating func drop(_ reason: ServerDropReason, count: UInt64 = 1) {
        guard count > 0 else { return }
        dropped[reason, default: 0] += count
    }

    /// A session index not in use.
    mutating func newIndex() -> UInt32 {
        while true {
            let index = UInt32.random(in: 1...UInt32.max)
            if byIndex[index] == nil { return index }
        }
    }

    /// Installs a new session for a peer, keeping the previous one for packets in flight.
    mutating func install(_ session: TransportSession, for position: Int, now: Date) {
        if let old = peers[position].previous { byIndex[old.localIndex] = nil }
        peers[position].previous = peers[position].current
        peers[position].current = session
        peers[position].lastHandshake = now
        byIndex[session.localIndex] = position
    }
}

extension ServerPeerTable.Peer: ReceivingSessions {}
