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
    /// Client identities from the profile's certificate payloads that this configuration names
    /// (`PayloadCertificateUUID`); netextd installs each and sets its `identityReference`.
    public var identities: [ProfileIdentity] = []
}

/// A client identity a profile carries for one of its configurations: a
/// `com.apple.security.pkcs12` payload (its `PayloadContent`, a PKCS#12 file, and its `Password`)
/// that a relay or DNS settings payload names by `PayloadCertificateUUID`. netextd turns it into
/// a PEM file of its own (certificate chain and key, mode 600) that the configuration's
/// `identityReference` then names, as Apple's configurations hold a keychain reference.
public struct ProfileIdentity: Sendable, Hashable {
    /// What in the configuration the identity is for.
    public enum Target: Sendable, Hashable {
        /// The relay at this index of a relay configuration's `relays`.
        case relay(index: Int)
        /// A DNS settings configuration's DoT or DoH client certificate.
        case dnsSettings
    }

    public var target: Target
    /// The PKCS#12 file's bytes.
    public var pkcs12: Data
    public var password: String?
    /// The certificate payload's `PayloadUUID`, for messages.
    public var payloadUUID: String

    public init(target: Target, pkcs12: Data, password: String?, payloadUUID: String) {
        self.target = target
        self.pkcs12 = pkcs12
        self.password = password
        self.payloadUUID = payloadUUID
    }
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
