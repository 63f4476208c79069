import Foundation

/// Parses a content filter payload (`com.apple.webcontent-filter`) with `FilterURLs` true into a
/// URL filter configuration. Keys follow Apple's WebContentFilter payload reference:
/// `URLFilterParameters` holds `URLFilterControlProviderBundleIdentifier`, `PIRServerURL`,
/// `PIRPrivacyPassIssuerURL`, `PIRAuthenticationToken` (moved to the secret store),
/// `URLFilterFailClosed` and `URLPrefilterFetchFrequency` (seconds). NetExt adds
/// `NetExtRelayURL`, the Oblivious HTTP relay to send queries through.
enum URLFilterPayloadParser {
    static func parse(_ payload: PlistReader, payloadIdentifier: String, owner: Owner, defaultName: String) throws(NetExtError) -> ProfileConfiguration {
        guard let parameters = try payload.dictionaryValue("URLFilterParameters") else {
            throw payload.fail("URLFilterParameters", "is required when FilterURLs is true")
        }
        var id = UUID()
        if let text = try payload.string("PayloadUUID") {
            guard let uuid = UUID(uuidString: text) else { throw payload.fail("PayloadUUID", "'\(text)' is not a UUID") }
            id = uuid
        }
        let interval = try parameters.number("URLPrefilterFetchFrequency") ?? URLFilterProtocol.defaultPrefilterFetchInterval
        let settings = URLFilterProtocol(
            pirServerURL: try parameters.requiredString("PIRServerURL"),
            pirPrivacyPassIssuerURL: try parameters.requiredString("PIRPrivacyPassIssuerURL"),
            controlProviderBundleIdentifier: try parameters.requiredString("URLFilterControlProviderBundleIdentifier"),
            prefilterFetchInterval: interval,
            shouldFailClosed: try parameters.flag("URLFilterFailClosed") ?? false,
            relayURL: try parameters.string("NetExtRelayURL"))
        let userDefinedName = try payload.string("UserDefinedName")
        let displayName = try payload.string("PayloadDisplayName")
        let name = userDefinedName ?? displayName ?? defaultName
        let configuration = Configuration(id: id, owner: owner, localizedDescription: name, isEnabled: true, protocolConfiguration: .urlFilter(settings))
        let result = ProfileConfiguration(
            payloadIdentifier: payloadIdentifier, payloadType: ProfileParser.contentFilterPayloadType, configuration: configuration,
            password: try parameters.string("PIRAuthenticationToken"), sharedSecret: nil)
        do { try result.configuration.validate() } catch {
            if interval < URLFilterProtocol.minimumPrefilterFetchInterval {
                throw parameters.fail("URLPrefilterFetchFrequency", "\(Int(interval)) s is below the minimum of 2700 s")
            }
            throw NetExtError.invalid("\(payload.context): \(error.message)")
        }
        return result
    }
}
