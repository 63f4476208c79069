import Foundation

/// Parses a DNS proxy payload (`com.apple.dnsProxy.managed`) into a DNS proxy configuration
/// (a provider configuration of type ``TunnelProviderProtocol/ProviderType/dnsProxy``). Keys
/// follow Apple's DNSProxy payload reference: `AppBundleIdentifier` (the app that contains the
/// provider; required), `ProviderBundleIdentifier` (the provider; the app's when absent) and
/// `ProviderConfiguration` (handed to the provider).
enum DNSProxyPayloadParser {
    static func parse(_ payload: PlistReader, payloadIdentifier: String, owner: Owner, defaultName: String) throws(NetExtError) -> ProfileConfiguration {
        let app = try payload.requiredString("AppBundleIdentifier")
        var id = UUID()
        if let text = try payload.string("PayloadUUID") {
            guard let uuid = UUID(uuidString: text) else { throw payload.fail("PayloadUUID", "'\(text)' is not a UUID") }
            id = uuid
        }
        var providerConfiguration: [String: JSONValue] = [:]
        if let dictionary = try payload.dictionaryValue("ProviderConfiguration") {
            guard case .object(let object)? = JSONValue(propertyList: dictionary.dictionary) else {
                throw payload.fail("ProviderConfiguration", "holds a value that cannot be represented")
            }
            providerConfiguration = object
        }
        let settings = TunnelProviderProtocol(
            providerBundleIdentifier: try payload.string("ProviderBundleIdentifier") ?? app,
            providerType: .dnsProxy, serverAddress: "", providerConfiguration: providerConfiguration)
        let name = try payload.string("PayloadDisplayName") ?? defaultName
        let configuration = Configuration(id: id, owner: owner, localizedDescription: name, isEnabled: true, protocolConfiguration: .tunnelProvider(settings))
        do { try configuration.validate() } catch {
            throw NetExtError.invalid("\(payload.context): \(error.message)")
        }
        return ProfileConfiguration(
            payloadIdentifier: payloadIdentifier, payloadType: ProfileParser.dnsProxyPayloadType, configuration: configuration, password: nil, sharedSecret: nil)
    }
}
