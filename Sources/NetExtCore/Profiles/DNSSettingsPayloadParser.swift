import Foundation

/// Parses a DNS settings payload (`com.apple.dnsSettings.managed`) into a DNS settings
/// configuration. Keys follow Apple's DNSSettings payload reference: `DNSSettings` holds
/// `DNSProtocol` (`HTTPS` or `TLS`), `ServerAddresses`, `ServerName` (TLS), `ServerURL`
/// (HTTPS) and `SupplementalMatchDomains`; NetExt adds `DNSProtocol` `ObliviousHTTPS` (RFC 9230)
/// with `ServerURL` (the target), `ProxyURL` and optionally `ObliviousDoHConfigs` (data);
/// `ProhibitDisablement` blocks other DNS;
/// `OnDemandRules` decide on which networks the settings are in force. `DNSSettings`'
/// `PayloadCertificateUUID` names the profile's PKCS#12 payload with the client identity for a
/// DoT or DoH server that asks for one (installed by netextd).
enum DNSSettingsPayloadParser {
    static func parse(
        _ payload: PlistReader, payloadIdentifier: String, owner: Owner, defaultName: String, certificates: inout ProfileParser.CertificatePayloads
    ) throws(NetExtError) -> ProfileConfiguration {
        guard let dns = try payload.dictionaryValue("DNSSettings") else { throw payload.fail("DNSSettings", "is required") }
        let identity = try certificates.identity(named: dns, for: .dnsSettings)
        var id = UUID()
        if let text = try payload.string("PayloadUUID") {
            guard let uuid = UUID(uuidString: text) else { throw payload.fail("PayloadUUID", "'\(text)' is not a UUID") }
            id = uuid
        }
        let transport: DNSSettingsProtocol.Transport
        switch try dns.requiredString("DNSProtocol") {
        case "HTTPS": transport = .overHTTPS
        case "TLS": transport = .overTLS
        case "ObliviousHTTPS": transport = .oblivious
        case let other: throw dns.fail("DNSProtocol", "'\(other)' is not HTTPS, TLS or ObliviousHTTPS")
        }
        let oblivious = transport == .oblivious
        if identity != nil, transport == .oblivious {
            throw dns.fail("PayloadCertificateUUID", "a client identity is for DNS over TLS or HTTPS; these settings are Oblivious DoH")
        }
        let settings = DNSSettingsProtocol(
            transport: transport, servers: try dns.stringArray("ServerAddresses") ?? [],
            serverName: transport == .overTLS ? try dns.string("ServerName") : nil,
            serverURL: transport == .overHTTPS || oblivious ? try dns.string("ServerURL") : nil,
            proxyURL: oblivious ? try dns.string("ProxyURL") : nil,
            obliviousConfigs: oblivious ? try dns.data("ObliviousDoHConfigs")?.base64EncodedString() : nil,
            matchDomains: try dns.stringArray("SupplementalMatchDomains") ?? [],
            prohibitsOtherDNS: try payload.flag("ProhibitDisablement") ?? false)
        let name = try payload.string("PayloadDisplayName") ?? defaultName
        // OnDemandRules (Apple's NEDNSSettingsManager.onDemandRules): the settings are in force
        // while the last matching rule says Connect.
        let rules = try OnDemandRulesParser.parse(payload)
        let configuration = Configuration(
            id: id, owner: owner, localizedDescription: name, isEnabled: true,
            isOnDemandEnabled: !rules.rules.isEmpty, onDemandRules: rules.rules, protocolConfiguration: .dnsSettings(settings))
        do { try configuration.validate() } catch {
            throw NetExtError.invalid("\(dns.context): \(error.message)")
        }
        return ProfileConfiguration(
            payloadIdentifier: payloadIdentifier, payloadType: ProfileParser.dnsSettingsPayloadType, configuration: configuration, password: nil, sharedSecret: nil,
            identities: identity.map { [$0] } ?? [])
    }
}
