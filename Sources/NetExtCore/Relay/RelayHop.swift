import Foundation

/// One relay server, as Apple's `NERelay`: a secure HTTP proxy that carries TCP with CONNECT
/// (RFC 9113 §8.5) and UDP with connect-udp (RFC 9298). Relays listed one after another in
/// ``RelayProtocol/relays`` are chained: the second is reached through the first.
public struct RelayHop: Sendable, Hashable, Codable {
    /// The relay's URL over HTTP/3 (`NERelay.http3RelayURL`). Kept so that a configuration
    /// written for Apple's devices keeps it, but not used: no QUIC implementation can be
    /// installed here, so NetExt reaches relays over HTTP/2 only.
    public var http3RelayURL: String?
    /// The relay's URL over HTTP/2 (`NERelay.http2RelayURL`): `https://HOST[:PORT]` with
    /// optionally the RFC 9298 URI template of its connect-udp resource as the path.
    public var http2RelayURL: String?
    /// A DNS-over-HTTPS resolver reached through the relay (`NERelay.dnsOverHTTPSURL`): names
    /// of relayed connections are resolved there rather than by this machine.
    public var dnsOverHTTPSURL: String?
    /// Header fields added to every CONNECT request (`additionalHTTPHeaderFields`), e.g. an
    /// `Proxy-Authorization` credential. `netext` prints their names, never their values, as
    /// text (`--json` gives the configuration whole, to those allowed to read it).
    public var additionalHTTPHeaderFields: [String: String]
    /// The public keys the relay may present (`NERelay.rawPublicKeys`), each the base64 of a
    /// DER SubjectPublicKeyInfo (RFC 7250 §3). TLS libraries here have no raw-public-key
    /// handshakes, so NetExt accepts a relay whose certificate carries one of these keys (a pin)
    /// instead of checking its chain.
    public var rawPublicKeys: [String]
    /// A PEM file (absolute path, mode 600) with the client certificate, its chain and key that
    /// authenticate this machine to the relay: NetExt's form of `NERelay.identityData`.
    public var identityReference: String?

    public init(
        http3RelayURL: String? = nil,
        http2RelayURL: String? = nil,
        dnsOverHTTPSURL: String? = nil,
        additionalHTTPHeaderFields: [String: String] = [:],
        rawPublicKeys: [String] = [],
        identityReference: String? = nil
    ) {
        self.http3RelayURL = http3RelayURL
        self.http2RelayURL = http2RelayURL
        self.dnsOverHTTPSURL = dnsOverHTTPSURL
        self.additionalHTTPHeaderFields = additionalHTTPHeaderFields
        self.rawPublicKeys = rawPublicKeys
        self.identityReference = identityReference
    }

    private enum CodingKeys: String, CodingKey {
        case http3RelayURL, http2RelayURL, dnsOverHTTPSURL, additionalHTTPHeaderFields, rawPublicKeys, identityReference
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        http3RelayURL = try container.decodeIfPresent(String.self, forKey: .http3RelayURL)
        http2RelayURL = try container.decodeIfPresent(String.self, forKey: .http2RelayURL)
        dnsOverHTTPSURL = try container.decodeIfPresent(String.self, forKey: .dnsOverHTTPSURL)
        additionalHTTPHeaderFields = try container.decodeIfPresent([String: String].self, forKey: .additionalHTTPHeaderFields) ?? [:]
        rawPublicKeys = try container.decodeIfPresent([String].self, forKey: .rawPublicKeys) ?? []
        identityReference = try container.decodeIfPresent(String.self, forKey: .identityReference)
    }
}
