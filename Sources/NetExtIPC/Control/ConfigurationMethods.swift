import Foundation
import NetExtCore

// The methods on configurations and their connections (docs/control-protocol.md, "Messages").

/// Must be the first request: the client's protocol version and app identifier.
public struct Hello: ControlMethod {
    public typealias Result = HelloResult
    public static let name = "hello"
    public var version: Int
    public var appIdentifier: String
    public init(version: Int = ControlProtocol.version, appIdentifier: String) {
        self.version = version
        self.appIdentifier = appIdentifier
    }
}

/// The configurations the caller may see (its own; root: all).
public struct ListConfigurations: ControlMethod {
    public typealias Result = ConfigurationList
    public static let name = "listConfigurations"
    public init() {}
}

/// One configuration the caller may see.
public struct LoadConfiguration: ConfigurationMethod {
    public typealias Result = ConfigurationResult
    public static let name = "loadConfiguration"
    public var configuration: ConfigurationReference
    public init(_ configuration: ConfigurationReference) { self.configuration = configuration }
}

/// Saves a configuration; secrets travel beside it and go to the secret store.
public struct SaveConfiguration: ControlMethod {
    public typealias Result = ConfigurationResult
    public static let name = "saveConfiguration"
    public static let modifiesState = true
    public var configuration: Configuration
    /// A new password to store (replaces the referenced one); nil keeps it.
    public var password: String?
    public var sharedSecret: String?
    /// Save even when another configuration the caller can see has the same name (compared
    /// without regard to case); otherwise a new configuration or a rename to a name in use is
    /// refused, since names would stop naming one thing.
    public var allowsDuplicateName: Bool?
    public init(configuration: Configuration, password: String? = nil, sharedSecret: String? = nil, allowsDuplicateName: Bool? = nil) {
        self.configuration = configuration
        self.password = password
        self.sharedSecret = sharedSecret
        self.allowsDuplicateName = allowsDuplicateName
    }
}

/// Removes a configuration and its secrets.
public struct RemoveConfiguration: ConfigurationMethod {
    public typealias Result = EmptyResult
    public static let name = "removeConfiguration"
    public static let modifiesState = true
    public var configuration: ConfigurationReference
    public init(_ configuration: ConfigurationReference) { self.configuration = configuration }
}

/// Starts a configuration's connection; answers once it left `connecting`.
public struct StartConnection: ControlMethod {
    public typealias Result = StatusInfo
    public static let name = "startConnection"
    public static let modifiesState = true
    public var configuration: ConfigurationReference
    /// Options handed to the provider's `startTunnel(options:)`.
    public var options: [String: JSONValue]
    public init(_ configuration: ConfigurationReference, options: [String: JSONValue] = [:]) {
        self.configuration = configuration
        self.options = options
    }
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ReferenceKeys.self)
        configuration = try ConfigurationReference(from: container)
        options = try container.decodeIfPresent([String: JSONValue].self, forKey: .options) ?? [:]
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ReferenceKeys.self)
        try configuration.encode(to: &container)
        try container.encode(options, forKey: .options)
    }
}

/// Stops a configuration's connection; answers once it is `disconnected`.
public struct StopConnection: ConfigurationMethod {
    public typealias Result = StatusInfo
    public static let name = "stopConnection"
    public static let modifiesState = true
    public var configuration: ConfigurationReference
    public init(_ configuration: ConfigurationReference) { self.configuration = configuration }
}

/// The status of one configuration, or of every configuration (anyone may read status: names
/// and states, nothing more).
public struct GetStatus: ControlMethod {
    public typealias Result = StatusList
    public static let name = "getStatus"
    /// nil: all.
    public var configuration: ConfigurationReference?
    public init(_ configuration: ConfigurationReference? = nil) { self.configuration = configuration }
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ReferenceKeys.self)
        configuration = container.contains(.id) || container.contains(.name) ? try ConfigurationReference(from: container) : nil
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ReferenceKeys.self)
        try configuration?.encode(to: &container)
    }
}

/// Turns the connection into a notification stream as well.
public struct Subscribe: ControlMethod {
    public typealias Result = EmptyResult
    public static let name = "subscribe"
    public init() {}
}

/// Delivers bytes to the running provider's `handleAppMessage` and returns its answer
/// (Apple's `NETunnelProviderSession.sendProviderMessage`).
public struct SendProviderMessage: ControlMethod {
    public typealias Result = ProviderMessageReply
    public static let name = "sendProviderMessage"
    public static let modifiesState = true
    public var configuration: ConfigurationReference
    /// The message, base64 on the wire.
    public var data: Data
    public init(_ configuration: ConfigurationReference, data: Data) {
        self.configuration = configuration
        self.data = data
    }
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: ReferenceKeys.self)
        configuration = try ConfigurationReference(from: container)
        data = try container.decode(Data.self, forKey: .data)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ReferenceKeys.self)
        try configuration.encode(to: &container)
        try container.encode(data, forKey: .data)
    }
}

/// A method whose only parameter names a configuration (`{"id": …}` or `{"name": …}`).
public protocol ConfigurationMethod: ControlMethod {
    var configuration: ConfigurationReference { get }
    init(_ configuration: ConfigurationReference)
}

extension ConfigurationMethod {
    public init(from decoder: any Decoder) throws {
        self.init(try ConfigurationReference(from: decoder.container(keyedBy: ReferenceKeys.self)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ReferenceKeys.self)
        try configuration.encode(to: &container)
    }
}
