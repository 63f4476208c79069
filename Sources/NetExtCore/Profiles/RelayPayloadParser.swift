import Foundation

/// Parses a Relay payload (`com.apple.relay.managed`) into a relay configuration. Keys follow
/// Apple's Relay payload reference: `Relays` (required; each with `HTTP2RelayURL`,
/// `HTTP3RelayURL`, `AdditionalHTTPHeaderFields`, `RawPublicKeys` as data), `MatchDomains`,
/// `ExcludedDomains`, `MatchFQDNs`, `ExcludedFQDNs`, `AllowDNSFailover` and `OnDemandRules`.
/// A relay's `PayloadCertificateUUID` names the profile's PKCS#12 payload with its client
/// identity (installed by netextd); NetExt adds a relay's `DNSOverHTTPSURL` and
/// `IdentityReference` (a PEM file's path), which does not go with `PayloadCertificateUUID`.
enum RelayPayloadParser {
    static func parse(
        _ payload: PlistReader, payloadIdentifier: String, owner: Owner, defaultName: String, certificates: inout ProfileParser.CertificatePayloads
    ) throws(NetExtError) -> ProfileConfiguration {
        guard let relayReaders = try payload.dictionaryArray("Relays") else { throw payload.fail("Relays", "is required") }
        var id = UUID()
        if let text = try payload.string("PayloadUUID") {
            guard let uuid = UUID(uuidString: text) else { throw payload.fail("PayloadUUID", "'\(text)' is not a UUID") }
            id = uuid
        }
        var relays: [RelayHop] = []
        var identities: [ProfileIdentity] = []
        for (index, relay) in relayReaders.enumerated() {
            if let identity = try certificates.identity(named: relay, for: .relay(index: index)) {
                if relay.has("IdentityReference") { throw relay.fail("IdentityReference", "goes with no PayloadCertificateUUID: name the identity one way") }
                identities.append(identity)
            }
            var headers: [String: String] = [:]
            if let fields = try relay.dictionaryValue("AdditionalHTTPHeaderFields") {
                for name in fields.dictionary.keys.sorted() {
                    guard let value = try fields.string(name) else { continue }
                    headers[name] = value
                }
            }
            var keys: [String] = []
            if let items = try relay.array("RawPublicKeys") {
                for (index, item) in items.enumerated() {
                    guard PlistValueKind(item) == .data, let data = item as? Data else {
                        throw relay.fail("RawPublicKeys[\(index)]", "expected data, found \(PlistValueKind(item).rawValue)")
                    }
                    keys.append(data.base64EncodedString())
                }
            }
            relays.append(RelayHop(
                http3RelayURL: try relay.string("HTTP3RelayURL"), http2RelayURL: try relay.string("HTTP2RelayURL"),
                dnsOverHTTPSURL: try relay.string("DNSOverHTTPSURL"), additionalHTTPHeaderFields: headers,
                rawPublicKeys: keys, identityReference: try relay.string("IdentityReference")))
        }
        let settings = RelayProtocol(
            relays: relays,
            matchDomains: try payload.stringArray("MatchDomains") ?? [],
            excludedDomains: try payload.stringArray("ExcludedDomains") ?? [],
            matchFQDNs: try payload.stringArray("MatchFQDNs") ?? [],
            excludedFQDNs: try payload.stringArray("ExcludedFQDNs") ?? [],
            allowsDNSFailover: try payload.flag("AllowDNSFailover") ?? false)
        let name = try payload.string("PayloadDisplayName") ?? defaultName
        let rules = try OnDemandRulesParser.parse(payload)
        let configuration = Configuration(
            id: id, owner: owner, localizedDescription: name, isEnabled: true,
            isOnDemandEnabled: !rules.rules.isEmpty, onDemandRules: rules.rules, protocolConfiguration: .relay(settings))
        do { try configuration.validate() } catch {
            throw NetExtError.invalid("\(payload.context): \(error.message)")
        }
        return ProfileConfiguration(
            payloadIdentifier: payloadIdentifier, payloadType: ProfileParser.relayPayloadType, configuration: configuration, password: nil, sharedSecret: nil,
            identities: identities)
    }
}
