/// Parses the app-to-per-app-VPN mapping payload (`com.apple.vpn.managed.appmapping`, Apple's
/// "App-to-App-Layer VPN Mapping": `AppLayerVPNMapping`, an array of dictionaries with
/// `Identifier` and `VPNUUID`, and `SigningIdentifier`, `DesignatedRequirement`, `Path` on
/// macOS) into app rules for the per-app VPNs of the same profile. On Linux the identifier is the
/// app's ``AppIdentifier``; `SigningIdentifier` must agree with it when given; `Path` becomes
/// `matchPath`; a designated requirement has no counterpart and is not checked.
enum AppMappingPayloadParser {
    struct Mapping: Sendable, Hashable {
        var vpnUUID: String
        var rule: AppRule
    }

    static func parse(_ payload: PlistReader) throws(NetExtError) -> [Mapping] {
        guard let items = try payload.dictionaryArray("AppLayerVPNMapping") else { throw payload.fail("AppLayerVPNMapping", "is required") }
        var mappings: [Mapping] = []
        for item in items {
            let identifierText = try item.requiredString("Identifier")
            let identifier: AppIdentifier
            do { identifier = try AppIdentifier(identifierText) } catch { throw item.fail("Identifier", error.message) }
            if let signing = try item.string("SigningIdentifier"), signing != identifierText {
                throw item.fail("SigningIdentifier", "'\(signing)' differs from Identifier '\(identifierText)'; on Linux an app has one identifier")
            }
            let uuid = try item.requiredString("VPNUUID")
            guard !uuid.isEmpty else { throw item.fail("VPNUUID", "must not be empty") }
            let rule: AppRule
            do { rule = try AppRule(matchSigningIdentifier: identifier, matchPath: try item.string("Path")) } catch {
                throw item.fail("Path", error.message)
            }
            mappings.append(Mapping(vpnUUID: uuid, rule: rule))
        }
        return mappings
    }

    /// Adds each mapping's rule to the per-app VPN with its `VPNUUID`; a mapping whose VPNUUID
    /// no per-app VPN payload of the profile has is refused, naming it.
    static func apply(_ mappings: [Mapping], to configurations: inout [ProfileConfiguration], context: String) throws(NetExtError) {
        for mapping in mappings {
            guard let index = configurations.firstIndex(where: { entry in
                if case .tunnelProvider(let settings) = entry.configuration.protocolConfiguration { return settings.perAppUUID == mapping.vpnUUID }
                return false
            }), case .tunnelProvider(var settings) = configurations[index].configuration.protocolConfiguration else {
                throw .invalid("\(context): \(mapping.rule.matchSigningIdentifier) is mapped to VPNUUID '\(mapping.vpnUUID)', which no per-app VPN payload (com.apple.vpn.managed.applayer) of this profile has")
            }
            settings.appRules.removeAll { $0.matchSigningIdentifier == mapping.rule.matchSigningIdentifier }
            settings.appRules.append(mapping.rule)
            configurations[index].configuration.protocolConfiguration = .tunnelProvider(settings)
            do { try configurations[index].configuration.validate() } catch { throw .invalid("\(context): \(error.message)") }
        }
    }
}
