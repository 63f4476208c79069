import Foundation
import HTTPCapsules
import MASQUERelay
import NetExt
import NetExtCore
import NIOSSL
import Synchronization

/// A packet tunnel over a MASQUE relay's connect-ip (RFC 9484): the relay assigns the tunnel
/// its address and advertises the networks it reaches, netextd makes a TUN interface with that
/// address and routes, and whole IP packets go both ways in DATAGRAM capsules over one HTTP/2
/// stream of one TLS connection. Any IP protocol passes (ICMP, UDP, TCP, others), which
/// CONNECT and connect-udp flows cannot carry.
///
/// Registered as `com.netext.relay.ip-tunnel` (extension point packet-tunnel, the relay
/// provider's executable). The configuration: `serverAddress` is the relay (`HOST[:PORT]`,
/// port 443 by default, or its `https://` URL), the password (`--password-stdin`) its bearer token, if it asks for
/// one; `providerConfiguration` may hold `caFile` (the CAs the relay's and the issuer's
/// certificates must chain to; the system's otherwise), `scope` (what the tunnel asks to reach:
/// `*`, an address or a prefix; `*` by default) and `privacyPassIssuer` (`https://HOST[:PORT]`:
/// the relay takes Privacy Pass tokens, fetched from this issuer when it asks, and the password
/// is then the issuer's credential, not a bearer token for the relay).
public final class ConnectIPTunnelProvider: TunnelProvider {
    private struct Running {
        var client: RelayClient
        var tunnel: RelayIPTunnel
        var pumps: [Task<Void, Never>]
    }

    /// The bundle it is registered as (the relay provider's executable, extension point packet-tunnel).
    public static let bundleIdentifier = "com.netext.relay.ip-tunnel"

    private let running = Mutex<Running?>(nil)
    private let counts = Mutex((toRelay: 0, fromRelay: 0, dropped: 0))

    public init() {}

    public func startTunnel(options: [String: JSONValue]?, context: ProviderContext) async throws {
        guard let address = context.serverAddress, !address.isEmpty else {
            throw NetExtError.invalid("serverAddress is empty; set it to the relay's HOST[:PORT]")
        }
        let relay = try RelayURL(parsing: address.contains("://") ? address : "https://" + address)
        let roots = try RelayProxyProvider.trustRoots(from: context.providerConfiguration)
        let scope = try Self.scope(from: context.providerConfiguration)
        let tokens = try Self.tokenSource(from: context.providerConfiguration, password: context.password)
        let client: RelayClient
        do {
            client = try await RelayClient.connect(
                host: relay.host, port: relay.port, trustRoots: roots, token: tokens == nil ? context.password : nil, tokens: tokens)
        } catch {
            throw NetExtError(.connectionFailed, "cannot reach the relay \(relay.host):\(relay.port): \(error)")
        }
        let tunnel: RelayIPTunnel
        do { tunnel = try await client.openIPTunnel(scope: scope) } catch {
            await client.close()
            throw NetExtError(.connectionFailed, "the relay gave no IP tunnel: \(error)")
        }
        let settings = try Self.settings(relayHost: relay.host, addresses: tunnel.assignedAddresses, routes: tunnel.routes)
        do {
            try await context.setTunnelNetworkSettings(settings)
        } catch {
            tunnel.close()
            await client.close()
            throw error
        }
        guard let flow = context.packetFlow else {
            tunnel.close()
            await client.close()
            throw NetExtError(.connectionFailed, "netextd applied the settings but no packet flow arrived")
        }
        let outbound = Task { [self] in
            // The system's packets into the tunnel.
            while !Task.isCancelled {
                guard let packets = try? await flow.readPackets(limit: 64) else { break }
                let sent = tunnel.send(packets.map(\.data))
                let dropped = packets.count - sent
                counts.withLock {
                    $0.toRelay += sent
                    $0.dropped += dropped
                }
                if !tunnel.isOpen { break }
            }
        }
        let inbound = Task { [self] in
            // The relay's packets to the system; the stream's end ends the tunnel.
            for await packet in tunnel.packets {
                do { try flow.writePackets([TunnelPacket(data: packet)]) } catch { break }
                counts.withLock { $0.fromRelay += 1 }
            }
            guard !Task.isCancelled else { return }
            Self.log("the relay ended the IP tunnel")
            await context.cancelTunnel(with: NetExtError(.connectionFailed, "the relay ended the IP tunnel"))
        }
        running.withLock { $0 = Running(client: client, tunnel: tunnel, pumps: [outbound, inbound]) }
        Self.log("IP tunnel up through \(relay.host):\(relay.port): \(tunnel.assignedAddresses.map(\.description).joined(separator: ", ")), routes \(settings.routeSummary)")
    }

    public func stopTunnel(reason: ProviderStopReason) async {
        guard let stopped = running.withLock({ current -> Running? in
            defer { current = nil }
            return current
        }) else { return }
        for pump in stopped.pumps { pump.cancel() }
        stopped.tunnel.close()
        await stopped.client.close()
        let counted = counts.withLock { $0 }
        Self.log("IP tunnel stopped (\(reason.rawValue)): \(counted.toRelay) packets to the relay, \(counted.fromRelay) from it, \(counted.dropped) not sent")
    }

    /// App messages: `status` answers the packets each way and the tunnel's addresses.
    public func handleAppMessage(_ messageData: Data) async -> Data? {
        guard String(decoding: messageData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "status",
              let tunnel = running.withLock({ $0?.tunnel }) else { return nil }
        let counted = counts.withLock { $0 }
        let object: [String: JSONValue] = [
            "addresses": .array(tunnel.assignedAddresses.map { .string($0.description) }),
            "packetsToRelay": .number(Double(counted.toRelay)), "packetsFromRelay": .number(Double(counted.fromRelay)),
            "packetsNotSent": .number(Double(counted.dropped)),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try? encoder.encode(object)
    }

    /// Privacy Pass tokens from `privacyPassIssuer` of the provider configuration, the password
    /// the issuer's credential; nil without that key.
    static func tokenSource(from configuration: [String: JSONValue], password: String?) throws(NetExtError) -> (any RelayTokenSource)? {
        guard let value = configuration["privacyPassIssuer"] else { return nil }
        guard case .string(let text) = value else { throw NetExtError(.configurationInvalid, "providerConfiguration 'privacyPassIssuer' must be a URL string") }
        do { try RelayProtocol.checkIssuerURL(text, field: "providerConfiguration 'privacyPassIssuer'") } catch {
            throw NetExtError(.configurationInvalid, error.message)
        }
        guard let password, !password.isEmpty else {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'privacyPassIssuer' is set, so the password must be the issuer's credential; none was given (--password-stdin)")
        }
        return try RelayProxyProvider.tokenSource(issuerURL: text, credential: password, configuration: configuration)
    }

    /// `providerConfiguration.scope`: `*` (default), an address or a prefix.
    static func scope(from configuration: [String: JSONValue]) throws(NetExtError) -> ConnectIPScope {
        guard case .string(let text)? = configuration["scope"], text != "*" else { return ConnectIPScope() }
        do { return ConnectIPScope(target: .prefix(try IPPrefix(text, allowHostBits: false))) } catch {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'scope': '\(text)' is not *, an address or a prefix")
        }
    }

    /// The tunnel's settings: the relay's address as the remote, the assigned addresses (each a
    /// host address on the interface), and every advertised range as the smallest set of
    /// prefixes that covers it (routes are by destination only: a range for one IP protocol is
    /// routed whole, and the relay drops what falls outside it).
    static func settings(relayHost: String, addresses: [IPPrefix], routes: [IPAddressRange]) throws(NetExtError) -> PacketTunnelNetworkSettings {
        let v4 = addresses.filter { !$0.isIPv6 }, v6 = addresses.filter(\.isIPv6)
        let prefixes = routes.flatMap { IPRangePrefixes.covering(start: $0.start, end: $0.end) }
        let v4Routes = prefixes.filter { !$0.isIPv6 }.map { IPv4Route(destinationAddress: $0.addressText, subnetMask: IPPrefix.subnetMask(length: $0.length)) }
        let v6Routes = prefixes.filter(\.isIPv6).map { IPv6Route(destinationAddress: $0.addressText, networkPrefixLength: $0.length) }
        guard !v4.isEmpty || !v6.isEmpty else { throw NetExtError(.connectionFailed, "the relay assigned the tunnel no address") }
        return PacketTunnelNetworkSettings(
            tunnelRemoteAddress: relayHost,
            ipv4Settings: v4.isEmpty ? nil : IPv4Settings(
                addresses: v4.map(\.addressText), subnetMasks: v4.map { _ in "255.255.255.255" }, includedRoutes: v4Routes, excludedRoutes: []),
            ipv6Settings: v6.isEmpty ? nil : IPv6Settings(
                addresses: v6.map(\.addressText), networkPrefixLengths: v6.map { _ in 128 }, includedRoutes: v6Routes, excludedRoutes: []))
    }

    static func log(_ message: String) {
        FileHandle.standardError.write(Data("netext-relay-provider: \(message)\n".utf8))
    }
}

extension PacketTunnelNetworkSettings {
    /// The included routes in short (for the log).
    var routeSummary: String {
        let v4 = ipv4Settings?.includedRoutes.map { "\($0.destinationAddress)/\(IPPrefix.length(ofSubnetMask: $0.subnetMask) ?? 0)" } ?? []
        let v6 = ipv6Settings?.includedRoutes.map { "\($0.destinationAddress)/\($0.networkPrefixLength)" } ?? []
        let all = v4 + v6
        return all.isEmpty ? "none" : all.joined(separator: ", ")
    }
}
