import Crypto
import Foundation
import NetExt
import NetExtCore
import NetExtLinux
import Synchronization
import TunnelProtocol

/// The reference packet tunnel provider (`netext-tunnel-provider`): speaks the NetExt tunnel
/// protocol to `netext-server tunnel`.
///
/// Configuration: `serverAddress` is `HOST:PORT` (a name or numeric address; port 51900 if omitted),
/// `providerConfiguration["serverPublicKey"]` the server's public key (base64), and the
/// configuration's **password** is the client's private key (base64) — so the key lives in
/// netextd's secret store, never in the readable configuration.
public final class ReferenceTunnelProvider: TunnelProvider {
    public static let defaultPort: UInt16 = 51900
    private let client = Mutex<TunnelClient?>(nil)

    public init() {}

    public func startTunnel(options: [String: JSONValue]?, context: ProviderContext) async throws {
        guard let address = context.serverAddress, !address.isEmpty else {
            throw NetExtError.invalid("serverAddress is empty; set it to HOST or HOST:PORT")
        }
        let server = try Self.endpoint(address)
        guard let serverKeyText = context.providerConfiguration["serverPublicKey"]?.stringValue else {
            throw NetExtError.invalid("providerConfiguration.serverPublicKey (the server's public key, base64) is required")
        }
        guard let privateKeyText = context.password else {
            throw NetExtError.invalid("the client's private key is the configuration's password; set it with --password-stdin")
        }
        let serverKey: Curve25519.KeyAgreement.PublicKey
        let privateKey: Curve25519.KeyAgreement.PrivateKey
        do {
            serverKey = try TunnelKeys.publicKey(base64: serverKeyText)
            privateKey = try TunnelKeys.privateKey(base64: privateKeyText)
        } catch {
            throw NetExtError.invalid("bad key: \(error)")
        }
        let tunnel = try TunnelClient(
            server: server, serverKey: serverKey, staticKey: privateKey,
            onReasserting: { value in Task { await context.setReasserting(value) } },
            onStatistics: { statistics in Task { await context.reportTunnelStatistics(statistics) } },
            log: { message in FileHandle.standardError.write(Data("netext-tunnel-provider: \(message)\n".utf8)) })
        let assignment = try await tunnel.connect(deadline: 15)
        let settings = try Self.settings(for: assignment, server: server)
        try await context.setTunnelNetworkSettings(settings)
        guard let flow = context.packetFlow else { throw NetExtError(.connectionFailed, "netextd applied the settings but no packet flow arrived") }
        client.withLock { $0 = tunnel }
        tunnel.run(flow: flow)
    }

    /// App messages: `status` answers a JSON object with the encrypted bytes each way, the
    /// link-scoped packets not carried, and the server's address; anything else gets no answer.
    public func handleAppMessage(_ messageData: Data) async -> Data? {
        guard String(decoding: messageData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "status",
              let tunnel = client.withLock({ $0 }) else { return nil }
        let counts = tunnel.byteCounts
        let object: [String: JSONValue] = [
            "server": .string(tunnel.server.description),
            "encryptedBytesReceived": .number(Double(counts.received)),
            "encryptedBytesSent": .number(Double(counts.sent)),
            "linkScopedPacketsDropped": .number(Double(tunnel.linkScopedPacketsDropped)),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try? encoder.encode(object)
    }

    public func stopTunnel(reason: ProviderStopReason) async {
        client.withLock { client in
            client?.stop()
            client = nil
        }
    }

    /// `HOST:PORT`, `[V6]:PORT`, or a bare host (default port); HOST may be a name, resolved
    /// once at start with the system resolver (IPv4 first).
    static func endpoint(_ text: String) throws(NetExtError) -> SocketAddress {
        if let address = SocketAddress(text) { return address }
        if let bytes = IPPrefix.parseAddress(text) { return SocketAddress(address: bytes, port: defaultPort) }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let host: String
        let port: UInt16
        switch parts.count {
        case 1:
            host = text
            port = defaultPort
        case 2:
            guard let value = UInt16(parts[1]), value > 0 else { throw .invalid("serverAddress '\(text)': '\(parts[1])' is not a port number") }
            host = String(parts[0])
            port = value
        default:
            throw .invalid("serverAddress '\(text)' is not HOST, HOST:PORT or [IPv6]:PORT")
        }
        guard !host.isEmpty, host.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0 & ~0x20) }) else {
            throw .invalid("serverAddress '\(text)': '\(host)' is not a host name")
        }
        let addresses: [SocketAddress]
        do { addresses = try SocketAddress.resolve(host: host, port: port) } catch {
            throw NetExtError(.connectionFailed, "cannot resolve the server's name: \(error)")
        }
        guard let first = addresses.first else { throw NetExtError(.connectionFailed, "the server's name \(host) has no addresses") }
        return first
    }

    /// The network settings for what the server pushed.
    static func settings(for assignment: TunnelAssignment, server: SocketAddress) throws(NetExtError) -> PacketTunnelNetworkSettings {
        var v4Addresses: [String] = [], v4Masks: [String] = [], v6Addresses: [String] = [], v6Lengths: [Int] = []
        for text in assignment.addresses {
            let prefix = try IPPrefix(text, allowHostBits: true)
            if prefix.isIPv6 {
                v6Addresses.append(prefix.addressText)
                v6Lengths.append(prefix.length)
            } else {
                v4Addresses.append(prefix.addressText)
                v4Masks.append(IPPrefix.subnetMask(length: prefix.length))
            }
        }
        var v4Routes: [IPv4Route] = [], v6Routes: [IPv6Route] = [], v4Excluded: [IPv4Route] = [], v6Excluded: [IPv6Route] = []
        for (texts, included) in [(assignment.includedRoutes, true), (assignment.excludedRoutes, false)] {
            for text in texts {
                let prefix = try IPPrefix(text)
                if prefix.isIPv6 {
                    let route = IPv6Route(destinationAddress: prefix.addressText, networkPrefixLength: prefix.length)
                    if included { v6Routes.append(route) } else { v6Excluded.append(route) }
                } else {
                    let route = IPv4Route(destinationAddress: prefix.addressText, subnetMask: IPPrefix.subnetMask(length: prefix.length))
                    if included { v4Routes.append(route) } else { v4Excluded.append(route) }
                }
            }
        }
        return PacketTunnelNetworkSettings(
            tunnelRemoteAddress: server.hostText,
            ipv4Settings: v4Addresses.isEmpty ? nil : IPv4Settings(addresses: v4Addresses, subnetMasks: v4Masks, includedRoutes: v4Routes, excludedRoutes: v4Excluded),
            ipv6Settings: v6Addresses.isEmpty ? nil : IPv6Settings(addresses: v6Addresses, networkPrefixLengths: v6Lengths, includedRoutes: v6Routes, excludedRoutes: v6Excluded),
            dnsSettings: assignment.dnsServers.isEmpty ? nil : DNSSettings(servers: assignment.dnsServers, searchDomains: assignment.searchDomains, matchDomains: assignment.matchDomains),
            proxySettings: assignment.httpProxy == nil && assignment.httpsProxy == nil ? nil
                : ProxySettings(httpServer: assignment.httpProxy, httpsServer: assignment.httpsProxy, exceptionList: assignment.proxyExceptions ?? []),
            mtu: assignment.mtu,
            tunnelOverheadBytes: assignment.mtu == nil ? (server.isIPv6 ? 80 : 60) : nil)
    }
}
