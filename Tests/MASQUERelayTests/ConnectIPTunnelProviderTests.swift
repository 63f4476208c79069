import HTTPCapsules
import NetExt
import NetExtCore
import Testing
@testable import RelayProvider

/// The packet tunnel over connect-ip: what the relay assigned and advertised as the tunnel's
/// settings, and the scope it asks for. Its tunnel end to end runs in scripts/e2e/relay.sh.
@Suite("Relay provider: the packet tunnel over connect-ip (settings)")
struct ConnectIPTunnelProviderTests {
    @Test("addresses become host addresses on the interface, ranges the fewest prefixes covering them, the relay the remote address")
    func settings() throws {
        let settings = try ConnectIPTunnelProvider.settings(
            relayHost: "203.0.113.2",
            addresses: [try IPPrefix("10.77.0.2/32"), try IPPrefix("fd77::2/128")],
            routes: [
                IPAddressRange(version: 4, start: [10, 20, 0, 0], end: [10, 20, 0, 255]),
                IPAddressRange(version: 4, start: [192, 0, 2, 1], end: [192, 0, 2, 2], ipProtocol: 17),
                IPAddressRange(version: 6, start: [0xfd, 0x20] + [UInt8](repeating: 0, count: 14), end: [0xfd, 0x20] + [UInt8](repeating: 0, count: 6) + [UInt8](repeating: 255, count: 8)),
            ])
        #expect(settings.tunnelRemoteAddress == "203.0.113.2")
        #expect(settings.ipv4Settings?.addresses == ["10.77.0.2"] && settings.ipv4Settings?.subnetMasks == ["255.255.255.255"])
        #expect(settings.ipv4Settings?.includedRoutes.map { "\($0.destinationAddress) \($0.subnetMask)" }
            == ["10.20.0.0 255.255.255.0", "192.0.2.1 255.255.255.255", "192.0.2.2 255.255.255.255"])
        #expect(settings.ipv6Settings?.addresses == ["fd77::2"] && settings.ipv6Settings?.networkPrefixLengths == [128])
        #expect(settings.ipv6Settings?.includedRoutes.map { "\($0.destinationAddress)/\($0.networkPrefixLength)" } == ["fd20::/64"])
        #expect(settings.routeSummary == "10.20.0.0/24, 192.0.2.1/32, 192.0.2.2/32, fd20::/64")
        #expect(throws: NetExtError.self) { try ConnectIPTunnelProvider.settings(relayHost: "203.0.113.2", addresses: [], routes: []) }
    }

    @Test("the scope: every destination by default, a prefix when configured, anything else refused naming the key")
    func scope() throws {
        #expect(try ConnectIPTunnelProvider.scope(from: [:]) == ConnectIPScope())
        #expect(try ConnectIPTunnelProvider.scope(from: ["scope": .string("*")]) == ConnectIPScope())
        #expect(try ConnectIPTunnelProvider.scope(from: ["scope": .string("10.20.0.0/24")]).path == "/.well-known/masque/ip/10.20.0.0%2F24/*/")
        do {
            _ = try ConnectIPTunnelProvider.scope(from: ["scope": .string("office.test")])
            Issue.record("a name was taken as a scope")
        } catch {
            #expect(error.message.contains("providerConfiguration 'scope'"), "\(error.message)")
        }
    }

    @Test("privacyPassIssuer: tokens from that issuer, the password its credential; a bad URL or no password refused naming the key")
    func privacyPassIssuer() throws {
        #expect(try ConnectIPTunnelProvider.tokenSource(from: [:], password: "bearer") == nil)
        #expect(try ConnectIPTunnelProvider.tokenSource(from: ["privacyPassIssuer": .string("https://issuer.example:8446")], password: "credential") != nil)
        let refused: [([String: JSONValue], String?, String)] = [
            (["privacyPassIssuer": .string("http://issuer.example")], "credential", "providerConfiguration 'privacyPassIssuer': 'http://issuer.example' must be https"),
            (["privacyPassIssuer": .bool(true)], "credential", "providerConfiguration 'privacyPassIssuer' must be a URL string"),
            (["privacyPassIssuer": .string("https://issuer.example")], nil, "the password must be the issuer's credential; none was given"),
        ]
        for (configuration, password, message) in refused {
            do {
                _ = try ConnectIPTunnelProvider.tokenSource(from: configuration, password: password)
                Issue.record("\(configuration) was accepted")
            } catch {
                #expect(error.message.contains(message), "\(error.message)")
            }
        }
    }
}
