import Crypto
import Foundation
import NetExtCore
import NetExtLinux
import TunnelProtocol

/// The tunnel server's view of its clients: who they are, what addresses they own, their current
/// sessions and where they were last heard from. Owned by `TunnelServer` behind one lock.
struct ServerPeerTable {
    struct Peer {
        var name: String
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
        /// Handshakes completed with this peer (connections and rekeys).
        var handshakes: UInt64 = 0
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

    /// The peers a configuration names, with no sessions yet. Peer n (from 0) gets host n + 2
    /// of each pool.
    init(configuration: TunnelServerConfiguration) {
        let routes = configuration.routes ?? [configuration.ipv4Pool, configuration.ipv6Pool].compactMap { $0 }
        for (index, peer) in configuration.peers.enumerated() {
            var addresses: [IPPrefix] = []
            if let pool = configuration.ipv4Pool, let address = TunnelServerConfiguration.host(index + 2, in: pool) { addresses.append(address) }
            if let pool = configuration.ipv6Pool, let address = TunnelServerConfiguration.host(index + 2, in: pool) { addresses.append(address) }
            let assignment = TunnelAssignment(
                addresses: addresses.map(\.description), includedRoutes: routes,
                dnsServers: configuration.dnsServers ?? [], searchDomains: configuration.searchDomains ?? [],
                matchDomains: configuration.matchDomains ?? [], mtu: configuration.mtu,
                httpProxy: configuration.httpProxy, httpsProxy: configuration.httpsProxy, proxyExceptions: configuration.proxyExceptions)
            let key = (try? TunnelKeys.publicKey(base64: peer.publicKey)).map { Array($0.rawRepresentation) } ?? []
            add(.init(name: peer.name, publicKey: key, addresses: addresses, assignment: assignment))
        }
    }

    init() {}

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
        peers[position].handshakes &+= 1
        byIndex[session.localIndex] = position
    }
}

extension ServerPeerTable.Peer: ReceivingSessions {}

/// What a reload did to the peers.
public struct PeerReload: Sendable, Equatable {
    /// Peers new in the file.
    public var added: [String] = []
    /// Peers no longer in the file; their sessions ended.
    public var removed: [String] = []
    /// Peers whose addresses or pushed settings changed; their sessions ended, so they
    /// handshake again and learn the new assignment.
    public var reset: [String] = []
    /// Peers kept as they were, sessions included.
    public var kept = 0

    public init(added: [String] = [], removed: [String] = [], reset: [String] = [], kept: Int = 0) {
        self.added = added
        self.removed = removed
        self.reset = reset
        self.kept = kept
    }
}

extension ServerPeerTable {
    /// The table for `fresh` (built from a new configuration), keeping everything a peer had —
    /// sessions, endpoint, replay state, counters — when its key, addresses and assignment are
    /// unchanged. Pure: the caller swaps it in under the lock.
    func reloaded(with fresh: ServerPeerTable) -> (table: ServerPeerTable, report: PeerReload) {
        var next = ServerPeerTable()
        next.dropped = dropped
        var report = PeerReload()
        for var peer in fresh.peers {
            if let position = byKey[peer.publicKey] {
                let old = peers[position]
                if old.addresses == peer.addresses && old.assignment == peer.assignment {
                    let name = peer.name
                    peer = old
                    peer.name = name
                    report.kept += 1
                } else {
                    // Keep what identifies the peer's traffic so far (replay protection of
                    // initiations, counters); its sessions end.
                    peer.lastTimestamp = old.lastTimestamp
                    peer.endpoint = old.endpoint
                    peer.bytesIn = old.bytesIn
                    peer.bytesOut = old.bytesOut
                    peer.packetsIn = old.packetsIn
                    peer.packetsOut = old.packetsOut
                    peer.handshakes = old.handshakes
                    report.reset.append(peer.name)
                }
            } else {
                report.added.append(peer.name)
            }
            let position = next.peers.count
            next.add(peer)
            for session in [peer.current, peer.previous].compactMap({ $0 }) { next.byIndex[session.localIndex] = position }
        }
        let freshKeys = Set(fresh.peers.map(\.publicKey))
        report.removed = peers.filter { !freshKeys.contains($0.publicKey) }.map(\.name)
        return (next, report)
    }
}
