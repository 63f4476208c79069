import Foundation
import NetExtCore

/// `netext-server tunnel show` in words, laid out as `wg show` lays out an interface: the server,
/// then each peer, the most recently active first (peers never seen last, by name).
public enum TunnelServerStatusText {
    public static func render(_ status: TunnelServerStatus, now: Date) -> String {
        var lines = [
            "server: \(status.listen)",
            "  public key: \(status.publicKey)",
            "  interface: \(status.interface.isEmpty ? "(none yet)" : status.interface)",
            "  uptime: \(HumanUnits.duration(now.timeIntervalSince(status.startedAt)))",
            "  peers: \(status.peers.count) configured, \(status.peers.filter(\.hasSession).count) with a session",
        ]
        for peer in ordered(status.peers) {
            lines.append("")
            lines.append("peer: \(peer.name)")
            lines.append("  public key: \(peer.publicKey)")
            lines.append("  endpoint: \(peer.endpoint ?? "(never heard from)")")
            lines.append("  addresses: \(peer.addresses.isEmpty ? "none" : peer.addresses.joined(separator: ", "))")
            if let handshake = peer.lastHandshake {
                lines.append("  latest handshake: \(HumanUnits.ago(now.timeIntervalSince(handshake)))\(peer.hasSession ? "" : " (session expired)")")
            }
            if peer.packetsReceived > 0 || peer.packetsSent > 0 {
                lines.append("  transfer: \(HumanUnits.bytes(peer.bytesReceived)) received, \(HumanUnits.bytes(peer.bytesSent)) sent")
            }
        }
        if !status.dropped.isEmpty {
            lines.append("")
            lines.append("dropped:")
            for (reason, count) in status.dropped.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
                lines.append("  \(count) \(reason)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Latest handshake first; peers without one after, by name.
    static func ordered(_ peers: [TunnelServerStatus.Peer]) -> [TunnelServerStatus.Peer] {
        peers.sorted { left, right in
            switch (left.lastHandshake, right.lastHandshake) {
            case let (l?, r?): l != r ? l > r : left.name < right.name
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): left.name < right.name
            }
        }
    }
}
