import Foundation

/// A configuration profile read from a `.mobileconfig` file: its identity, the configurations
/// its VPN payloads describe, and the payloads that were skipped.
public struct ConfigurationProfile: Sendable, Hashable {
    /// `PayloadIdentifier` of the profile; installing a profile with the same identifier replaces it.
    public var identifier: String
    public var uuid: String?
    public var displayName: String
    public var organization: String?
    public var configurations: [ProfileConfiguration]
    public var skippedPayloads: [SkippedPayload]

    public init(identifier: String, uuid: String?, displayName: String, organization: String?, configurations: [ProfileConfiguration], skippedPayloads: [SkippedPayload]) {
        self.identifier = identifier
        self.uuid = uuid
        self.displayName = displayName
        self.organization = organization
        self.configurations = configurations
        self.skippedPayloads = skippedPayloads
    }
}

/// A configuration from a profile payload together with the secrets it carried, which netextd
/// moves into its secret store before the configuration is saved.
public struct ProfileConfiguration: Sendable, Hashable {
    public var payloadIdentifier: String
    public var payloadType: String
    public var configuration: Configuration
    /// The password (`AuthPassword`), if the payload carried one.
    public var password: String?
    /// The IKEv2 shared secret (`SharedSecret`), if the payload carried one.
    public var sharedSecret: String?
}

/// A payload the profile carried that NetExt does not install.
public struct SkippedPayload: Sendable, Hashable, Codable {
    public var payloadType: String
    public var payloadIdentifier: String
    public var reason: String

    public init(payloadType: String, payloadIdentifier: String, reason: String) {
        self.payloadType = payloadType
        self.payloadIdentifier = payloadIdentifier
        self.reason = reason
    }
}
