import Foundation
import NetExtCore
import NetExtLinux
import TunnelProtocol

/// `netext-server tunnel`'s configuration file (JSON). See docs/tunnel-server.md.
public struct TunnelServerConfiguration: Sendable, Codable {
    public struct Peer: Sendable, Codable, Hashable {
        public var name: String
        public var publicKey: String
    }

    /// The server's private key (base64), or use `privateKeyFile`.
    public var privateKey: String?
    /// A file holding the private key (base64), which must not be readable by group or others.
    public var privateKeyFile: String?
    /// UDP address to listen on, e.g. `0.0.0.0:51900` or `[::]:51900`.
    public var listen: String
    /// The server's TUN interface name or pattern.
    public var interfaceName: String?
    /// Client address pools; the server takes the first host, peer n gets host n + 2.
    public var ipv4Pool: String?
    public var ipv6Pool: String?
    /// Routes pushed to clients (what they send into the tunnel). Default: the pools.
    public var routes: [String]?
    public var dnsServers: [String]?
    public var searchDomains: [String]?
    public var matchDomains: [String]?
    public var mtu: Int?
    /// Proxies pushed to clients (`HOST:PORT`), and the hosts that bypass them.
    public var httpProxy: String?
    public var httpsProxy: String?
    public var proxyExceptions: [String]?
    /// Above this many handshake initiations per second, initiations must carry a cookie.
    public var handshakesPerSecondBeforeCookies: Int?
    /// Turn on IP forwarding in the server's namespace while it runs (restored on stop).
    public var forward: Bool?
    /// Interfaces behind which client traffic is masqueraded (implies `forward`).
    public var masquerade: [String]?
    public var peers: [Peer]

    /// Reads and checks a configuration file; errors name the file and the key.
    public static func load(path: String) throws(NetExtError) -> TunnelServerConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else { throw .invalid("\(path): cannot read the file") }
        let configuration: TunnelServerConfiguration
        do {
            configuration = try JSONDecoder().decode(TunnelServerConfiguration.self, from: data)
        } catch {
            throw .invalid("\(path): \(JSONDecodingText.describe(error, data: data))")
        }
        try UnknownJSONKeys.refuse(in: data, decoded: configuration, file: path)
        try configuration.validate(file: path)
        return configuration
    }

    func validate(file: String) throws(NetExtError) {
        guard SocketAddress(listen) != nil else { throw .invalid("\(file): key 'listen': '\(listen)' is not ADDRESS:PORT") }
        guard ipv4Pool != nil || ipv6Pool != nil else { throw .invalid("\(file): at least one of 'ipv4Pool' and 'ipv6Pool' is required") }
        for (key, value) in [("ipv4Pool", ipv4Pool), ("ipv6Pool", ipv6Pool)] {
            guard let value else { continue }
            let prefix: IPPrefix
            do { prefix = try IPPrefix(value) } catch { throw .invalid("\(file): key '\(key)': \(error.message)") }
            guard prefix.isIPv6 == (key == "ipv6Pool") else { throw .invalid("\(file): key '\(key)': '\(value)' is of the wrong family") }
            let hostBits = (prefix.isIPv6 ? 128 : 32) - prefix.length
            guard hostBits >= 2, hostBits >= 64 || (1 << hostBits) >= peers.count + 3 else {
                throw .invalid("\(file): key '\(key)': \(value) has no room for \(peers.count) peers")
            }
        }
        for route in routes ?? [] {
            do { _ = try IPPrefix(route) } catch { throw .invalid("\(file): key 'routes': \(error.message)") }
        }
        var seen = Set<String>()
        for (index, peer) in peers.enumerated() {
            do { _ = try TunnelKeys.publicKey(base64: peer.publicKey) } catch {
                throw .invalid("\(file): key 'peers[\(index)].publicKey': not a 32-byte base64 key")
            }
            guard seen.insert(peer.publicKey).inserted else { throw .invalid("\(file): key 'peers[\(index)].publicKey': the same key appears twice") }
        }
        for (index, name) in (masquerade ?? []).enumerated() {
            guard InterfaceName.isValid(name) else {
                throw .invalid("\(file): key 'masquerade[\(index)]': '\(name)' is not an interface name")
            }
        }
        if privateKey == nil && privateKeyFile == nil { throw .invalid("\(file): one of 'privateKey' and 'privateKeyFile' is required") }
    }

    /// The top-level keys whose values differ between the two configurations (as JSON), sorted.
    public func keysDiffering(from other: TunnelServerConfiguration) -> [String] {
        func tree(_ value: TunnelServerConfiguration) -> [String: NSObject] {
            guard let data = try? JSONEncoder().encode(value),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
            return object.compactMapValues { $0 as? NSObject }
        }
        let mine = tree(self), theirs = tree(other)
        return Set(mine.keys).union(theirs.keys).filter { mine[$0] != theirs[$0] }.sorted().map { "'\($0)'" }
    }

    /// The server's static key (from `privateKey` or `privateKeyFile`).
    public func loadPrivateKey() throws(NetExtError) -> Curve25519KeyText {
        if let privateKey { return Curve25519KeyText(privateKey) }
        guard let path = privateKeyFile else { throw .invalid("no private key configured") }
        var info = stat()
        guard stat(path, &info) == 0, let data = FileManager.default.contents(atPath: path) else { throw .invalid("privateKeyFile \(path) cannot be read") }
        guard info.st_mode & 0o077 == 0 else { throw .invalid("privateKeyFile \(path) is readable by group or others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it") }
        return Curve25519KeyText(String(decoding: data, as: UTF8.self))
    }

    /// The address of host number `host` in a pool (1 = the server).
    static func host(_ host: Int, in pool: String) -> IPPrefix? {
        guard let prefix = try? IPPrefix(pool) else { return nil }
        var bytes = prefix.address
        var carry = host
        for index in bytes.indices.reversed() where carry > 0 {
            let sum = Int(bytes[index]) + (carry & 0xff)
            bytes[index] = UInt8(sum & 0xff)
            carry = (carry >> 8) + (sum >> 8)
        }
        return IPPrefix(address: bytes, length: prefix.isIPv6 ? 128 : 32)
    }
}

/// A private key as configured (base64 text), kept out of descriptions.
public struct Curve25519KeyText: Sendable, CustomStringConvertible {
    let text: String
    init(_ text: String) { self.text = text.trimmingCharacters(in: .whitespacesAndNewlines) }
    public var description: String { "<private key>" }
}
