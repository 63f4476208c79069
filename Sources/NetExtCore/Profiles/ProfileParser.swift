import Foundation

/// Reads Apple configuration profiles (`.mobileconfig`, XML or binary property lists) and turns
/// their VPN payloads (`com.apple.vpn.managed`, `com.apple.vpn.managed.applayer` with the apps
/// `com.apple.vpn.managed.appmapping` maps to it) and URL
/// filter payloads (`com.apple.webcontent-filter` with `FilterURLs`) and DNS settings payloads
/// (`com.apple.dnsSettings.managed`), DNS proxy payloads (`com.apple.dnsProxy.managed`) and
/// relay payloads (`com.apple.relay.managed`) into
/// configurations, with the PKCS#12 identities (`com.apple.security.pkcs12`) the relay and DNS
/// settings payloads name by `PayloadCertificateUUID`. Key names follow Apple's payload references.
public enum ProfileParser {
    public static let vpnPayloadType = "com.apple.vpn.managed"
    public static let appLayerVPNPayloadType = "com.apple.vpn.managed.applayer"
    public static let contentFilterPayloadType = "com.apple.webcontent-filter"
    public static let appMappingPayloadType = "com.apple.vpn.managed.appmapping"
    public static let dnsSettingsPayloadType = "com.apple.dnsSettings.managed"
    public static let dnsProxyPayloadType = "com.apple.dnsProxy.managed"
    public static let relayPayloadType = "com.apple.relay.managed"
    /// A certificate payload with a PKCS#12 identity (Apple's "Certificates" payloads).
    public static let pkcs12PayloadType = "com.apple.security.pkcs12"

    /// The profile's PKCS#12 payloads by `PayloadUUID` (upper-cased), for the payloads that name
    /// one by `PayloadCertificateUUID`.
    struct CertificatePayloads {
        var byUUID: [String: (pkcs12: Data, password: String?, payloadIdentifier: String)] = [:]
        private(set) var named: Set<String> = []

        /// The certificate payloads no payload named, by identifier, in the profile's order.
        var unnamed: [String] { byUUID.filter { !named.contains($0.key) }.map(\.value.payloadIdentifier).sorted() }

        /// The identity `reader`'s `PayloadCertificateUUID` names, for `target`; nil without
        /// the key; refused, naming the key, when it names no certificate payload of the profile.
        mutating func identity(named reader: PlistReader, for target: ProfileIdentity.Target) throws(NetExtError) -> ProfileIdentity? {
            guard let uuid = try reader.string("PayloadCertificateUUID") else { return nil }
            guard let found = byUUID[uuid.uppercased()] else {
                throw reader.fail("PayloadCertificateUUID", "'\(uuid)' names no \(ProfileParser.pkcs12PayloadType) payload in this profile")
            }
            named.insert(uuid.uppercased())
            return ProfileIdentity(target: target, pkcs12: found.pkcs12, password: found.password, payloadUUID: uuid)
        }
    }

    /// Parses a profile. `owner` becomes the owner of every configuration it yields.
    /// Errors name the payload and key at fault.
    public static func parse(_ data: Data, owner: Owner) throws(NetExtError) -> ConfigurationProfile {
        if data.first == 0x30 {
            throw .invalid("the profile is signed (a CMS/PKCS#7 envelope); signed profiles are not supported yet: extract the inner property list first (e.g. `openssl smime -verify -noverify -inform DER -in FILE -out unsigned.mobileconfig`)")
        }
        let root: Any
        do {
            root = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            throw .invalid("not a property list (XML or binary): \(error.localizedDescription)")
        }
        guard let dictionary = root as? [String: Any], PlistValueKind(root) == .dictionary else {
            throw .invalid("the profile's top level must be a dictionary, found \(PlistValueKind(root).rawValue)")
        }
        let top = PlistReader(dictionary, context: "profile")
        let type = try top.requiredString("PayloadType")
        guard type == "Configuration" else {
            throw top.fail("PayloadType", "expected 'Configuration', found '\(type)'")
        }
        let identifier = try top.requiredString("PayloadIdentifier")
        let displayName = try top.string("PayloadDisplayName") ?? identifier
        guard let payloads = try top.dictionaryArray("PayloadContent") else {
            throw top.fail("PayloadContent", "is required")
        }
        var configurations: [ProfileConfiguration] = []
        var skipped: [SkippedPayload] = []
        var mappings: [(AppMappingPayloadParser.Mapping, String)] = []
        // Certificate payloads first: a payload may name one that comes after it.
        var certificates = CertificatePayloads()
        for (index, payload) in payloads.enumerated() where try payload.string("PayloadType") == pkcs12PayloadType {
            let payloadIdentifier = try payload.string("PayloadIdentifier") ?? "\(identifier).payload\(index)"
            let reader = PlistReader(payload.dictionary, context: "payload '\(payloadIdentifier)' (\(pkcs12PayloadType))")
            let uuid = try reader.requiredString("PayloadUUID")
            guard let content = try reader.data("PayloadContent"), !content.isEmpty else { throw reader.fail("PayloadContent", "is required: the PKCS#12 file's bytes") }
            guard certificates.byUUID[uuid.uppercased()] == nil else { throw reader.fail("PayloadUUID", "'\(uuid)' is another certificate payload's too") }
            certificates.byUUID[uuid.uppercased()] = (content, try reader.string("Password"), payloadIdentifier)
        }
        for (index, payload) in payloads.enumerated() {
            let payloadType = try payload.requiredString("PayloadType")
            let payloadIdentifier = try payload.string("PayloadIdentifier") ?? "\(identifier).payload\(index)"
            let reader = PlistReader(payload.dictionary, context: "payload '\(payloadIdentifier)' (\(payloadType))")
            switch payloadType {
            case vpnPayloadType, appLayerVPNPayloadType:
                var parsed = try VPNPayloadParser.parse(reader, payloadType: payloadType, payloadIdentifier: payloadIdentifier, owner: owner)
                parsed.configuration.profileIdentifier = identifier
                if parsed.configuration.localizedDescription.isEmpty { parsed.configuration.localizedDescription = displayName }
                configurations.append(parsed)
            case contentFilterPayloadType where try reader.flag("FilterURLs") == true:
                var parsed = try URLFilterPayloadParser.parse(reader, payloadIdentifier: payloadIdentifier, owner: owner, defaultName: displayName)
                parsed.configuration.profileIdentifier = identifier
                if parsed.configuration.localizedDescription.isEmpty { parsed.configuration.localizedDescription = displayName }
                configurations.append(parsed)
            case dnsSettingsPayloadType:
                var parsed = try DNSSettingsPayloadParser.parse(reader, payloadIdentifier: payloadIdentifier, owner: owner, defaultName: displayName, certificates: &certificates)
                parsed.configuration.profileIdentifier = identifier
                configurations.append(parsed)
            case dnsProxyPayloadType:
                var parsed = try DNSProxyPayloadParser.parse(reader, payloadIdentifier: payloadIdentifier, owner: owner, defaultName: displayName)
                parsed.configuration.profileIdentifier = identifier
                configurations.append(parsed)
            case relayPayloadType:
                var parsed = try RelayPayloadParser.parse(reader, payloadIdentifier: payloadIdentifier, owner: owner, defaultName: displayName, certificates: &certificates)
                parsed.configuration.profileIdentifier = identifier
                configurations.append(parsed)
            case appMappingPayloadType:
                mappings += try AppMappingPayloadParser.parse(reader).map { ($0, reader.context) }
            case pkcs12PayloadType:
                break  // read above; an identity no payload names is reported after the loop
            case contentFilterPayloadType:
                skipped.append(SkippedPayload(payloadType: payloadType, payloadIdentifier: payloadIdentifier,
                                              reason: "only URL filter payloads (FilterURLs true) are installed from profiles so far"))
            default:
                skipped.append(SkippedPayload(payloadType: payloadType, payloadIdentifier: payloadIdentifier, reason: "payload type not supported by NetExt"))
            }
        }
        for unnamed in certificates.unnamed {
            skipped.append(SkippedPayload(
                payloadType: pkcs12PayloadType, payloadIdentifier: unnamed,
                reason: "no relay or DNS settings payload names this certificate payload (PayloadCertificateUUID); NetExt installs identities only for them"))
        }
        // App mappings last: the per-app VPNs they name may come after them in the profile.
        for (mapping, context) in mappings {
            try AppMappingPayloadParser.apply([mapping], to: &configurations, context: context)
        }
        let ids = configurations.map(\.configuration.id)
        if Set(ids).count != ids.count {
            throw .invalid("profile '\(identifier)': two payloads share the same PayloadUUID")
        }
        return ConfigurationProfile(
            identifier: identifier,
            uuid: try top.string("PayloadUUID"),
            displayName: displayName,
            organization: try top.string("PayloadOrganization"),
            configurations: configurations,
            skippedPayloads: skipped)
    }
}
