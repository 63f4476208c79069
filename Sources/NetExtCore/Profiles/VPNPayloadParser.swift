import Foundation

/// Parses one VPN payload (`com.apple.vpn.managed` or `.applayer`) into a configuration.
enum VPNPayloadParser {
    static func parse(_ payload: PlistReader, payloadType: String, payloadIdentifier: String, owner: Owner) throws(NetExtError) -> ProfileConfiguration {
        let id = try payloadUUID(payload)
        let userDefinedName = try payload.string("UserDefinedName")
        let displayName = try payload.string("PayloadDisplayName")
        let name = userDefinedName ?? displayName ?? ""
        guard let vpnType = try payload.string("VPNType") else { throw payload.fail("VPNType", "is required") }
        let isAppLayer = payloadType == ProfileParser.appLayerVPNPayloadType
        var result: ProfileConfiguration
        switch vpnType {
        case "IKEv2":
            if isAppLayer { throw payload.fail("VPNType", "per-app VPN payloads need VPNType 'VPN' with a provider, found 'IKEv2'") }
            guard let ikev2 = try payload.dictionaryValue("IKEv2") else { throw payload.fail("IKEv2", "is required for VPNType IKEv2") }
            result = try parseIKEv2(ikev2, id: id, name: name, owner: owner)
        case "VPN":
            guard let subtype = try payload.string("VPNSubType"), !subtype.isEmpty else {
                throw payload.fail("VPNSubType", "is required for VPNType VPN (the provider's bundle identifier)")
            }
            let vpn = try payload.dictionaryValue("VPN") ?? PlistReader([:], context: payload.context, prefix: "VPN.")
            result = try parseProvider(vpn, payload: payload, subtype: subtype, id: id, name: name, owner: owner)
            if isAppLayer {
                guard let uuid = try payload.string("VPNUUID"), !uuid.isEmpty else {
                    throw payload.fail("VPNUUID", "is required for a per-app VPN payload")
                }
                if case .tunnelProvider(var settings) = result.configuration.protocolConfiguration {
                    settings.perAppUUID = uuid
                    result.configuration.protocolConfiguration = .tunnelProvider(settings)
                }
            }
        default:
            throw payload.fail("VPNType", "unknown VPNType '\(vpnType)' (NetExt installs 'IKEv2' and 'VPN')")
        }
        result.payloadIdentifier = payloadIdentifier
        result.payloadType = payloadType
        do {
            try result.configuration.validate()
        } catch {
            throw NetExtError.invalid("\(payload.context): \(error.message)")
        }
        return result
    }

    private static func payloadUUID(_ payload: PlistReader) throws(NetExtError) -> UUID {
        guard let text = try payload.string("PayloadUUID") else { return UUID() }
        guard let uuid = UUID(uuidString: text) else { throw payload.fail("PayloadUUID", "'\(text)' is not a UUID") }
        return uuid
    }

    private static func parseIKEv2(_ ikev2: PlistReader, id: UUID, name: String, owner: Owner) throws(NetExtError) -> ProfileConfiguration {
        let method: IKEv2Protocol.AuthenticationMethod
        switch try ikev2.choice("AuthenticationMethod", allowed: ["None", "SharedSecret", "Certificate"]) ?? "None" {
        case "SharedSecret": method = .sharedSecret
        case "Certificate": method = .certificate
        default: method = .none
        }
        let settings = IKEv2Protocol(
            serverAddress: try ikev2.requiredString("RemoteAddress"),
            remoteIdentifier: try ikev2.string("RemoteIdentifier"),
            localIdentifier: try ikev2.string("LocalIdentifier"),
            authenticationMethod: method,
            useExtendedAuthentication: try ikev2.flag("ExtendedAuthEnabled") ?? false,
            username: try ikev2.string("AuthName"))
        let onDemand = try OnDemandRulesParser.parse(ikev2)
        let configuration = Configuration(
            id: id, owner: owner, localizedDescription: name, isEnabled: true,
            isOnDemandEnabled: onDemand.enabled, onDemandRules: onDemand.rules,
            protocolConfiguration: .personalVPN(settings))
        return ProfileConfiguration(
            payloadIdentifier: "", payloadType: "", configuration: configuration,
            password: try ikev2.string("AuthPassword"), sharedSecret: try ikev2.string("SharedSecret"))
    }

    private static func parseProvider(_ vpn: PlistReader, payload: PlistReader, subtype: String, id: UUID, name: String, owner: Owner) throws(NetExtError) -> ProfileConfiguration {
        let providerType: TunnelProviderProtocol.ProviderType
        switch try vpn.choice("ProviderType", allowed: ["packet-tunnel", "app-proxy", "transparent-proxy"]) ?? "packet-tunnel" {
        case "app-proxy": providerType = .appProxy
        case "transparent-proxy": providerType = .transparentProxy
        default: providerType = .packetTunnel
        }
        var vendor: [String: JSONValue] = [:]
        if let vendorConfig = try payload.dictionaryValue("VendorConfig") {
            guard case .object(let object)? = JSONValue(propertyList: vendorConfig.dictionary) else {
                throw payload.fail("VendorConfig", "holds a value that cannot be represented")
            }
            vendor = object
        }
        let settings = TunnelProviderProtocol(
            providerBundleIdentifier: try vpn.string("ProviderBundleIdentifier") ?? subtype,
            providerType: providerType,
            serverAddress: try vpn.requiredString("RemoteAddress"),
            providerConfiguration: vendor,
            username: try vpn.string("AuthName"),
            includeAllNetworks: try vpn.flag("IncludeAllNetworks") ?? false,
            excludeLocalNetworks: try vpn.flag("ExcludeLocalNetworks") ?? false,
            enforceRoutes: try vpn.flag("EnforceRoutes") ?? false)
        let onDemand = try OnDemandRulesParser.parse(vpn)
        let configuration = Configuration(
            id: id, owner: owner, localizedDescription: name, isEnabled: true,
            isOnDemandEnabled: onDemand.enabled, onDemandRules: onDemand.rules,
            protocolConfiguration: .tunnelProvider(settings))
        return ProfileConfiguration(
            payloadIdentifier: "", payloadType: "", configuration: configuration,
            password: try vpn.string("AuthPassword"), sharedSecret: nil)
    }
}
