import Foundation
import NetExtCore

/// The result of `hello`.
public struct HelloResult: Sendable, Hashable, Codable {
    public var version: Int
    public var daemonVersion: String
    /// The caller's user id as the kernel reported it.
    public var uid: UInt32
    /// Whether the caller may change configurations (root or the admin group).
    public var mayModify: Bool
    public init(version: Int, daemonVersion: String, uid: UInt32, mayModify: Bool) {
        self.version = version
        self.daemonVersion = daemonVersion
        self.uid = uid
        self.mayModify = mayModify
    }
}

/// The result of `listConfigurations`.
public struct ConfigurationList: Sendable, Hashable, Codable {
    public var configurations: [Configuration]
    public init(configurations: [Configuration]) { self.configurations = configurations }
}

/// The result of `loadConfiguration` and `saveConfiguration`.
public struct ConfigurationResult: Sendable, Hashable, Codable {
    public var configuration: Configuration
    /// Other configurations this save disabled (only one enterprise VPN may be enabled at a
    /// time); absent when none was.
    public var disabled: [ConfigurationName]?
    public init(configuration: Configuration, disabled: [ConfigurationName]? = nil) {
        self.configuration = configuration
        self.disabled = disabled
    }
}

/// A configuration's id and name, for answers that mention other configurations.
public struct ConfigurationName: Sendable, Hashable, Codable {
    public var id: UUID
    public var name: String
    public init(id: UUID, name: String) {
        self.id = id
        self.name = name
    }
}

/// An empty result.
public struct EmptyResult: Sendable, Hashable, Codable {
    public init() {}
}

/// The provider's answer to `sendProviderMessage` (nil: it had none).
public struct ProviderMessageReply: Sendable, Hashable, Codable {
    public var data: Data?
    public init(data: Data?) { self.data = data }
}

/// The result of `getStatus`.
public struct StatusList: Sendable, Hashable, Codable {
    public var statuses: [StatusInfo]
    public init(statuses: [StatusInfo]) { self.statuses = statuses }
}

/// An installed configuration profile.
public struct ProfileSummary: Sendable, Hashable, Codable {
    public var identifier: String
    public var displayName: String
    public var organization: String?
    public var installedAt: Date
    public var configurationIDs: [UUID]
    public var skippedPayloads: [SkippedPayload]
    public init(identifier: String, displayName: String, organization: String?, installedAt: Date, configurationIDs: [UUID], skippedPayloads: [SkippedPayload]) {
        self.identifier = identifier
        self.displayName = displayName
        self.organization = organization
        self.installedAt = installedAt
        self.configurationIDs = configurationIDs
        self.skippedPayloads = skippedPayloads
    }
}

/// The result of `listProfiles`.
public struct ProfileList: Sendable, Hashable, Codable {
    public var profiles: [ProfileSummary]
    public init(profiles: [ProfileSummary]) { self.profiles = profiles }
}

/// The result of `removeProfile`.
public struct ProfileRemoval: Sendable, Hashable, Codable {
    public var identifier: String
    public var removedConfigurationIDs: [UUID]
    public init(identifier: String, removedConfigurationIDs: [UUID]) {
        self.identifier = identifier
        self.removedConfigurationIDs = removedConfigurationIDs
    }
}

/// The result of `listProviders`: valid manifests, and the files that were refused.
public struct ProviderList: Sendable, Hashable, Codable {
    public var providers: [ProviderManifest]
    public var problems: [String]
    public init(providers: [ProviderManifest], problems: [String]) {
        self.providers = providers
        self.problems = problems
    }
}

/// The result of `getFilterLog`.
public struct FilterLogResult: Sendable, Hashable, Codable {
    public var entries: [FilterLogEntry]
    public init(entries: [FilterLogEntry]) { self.entries = entries }
}
