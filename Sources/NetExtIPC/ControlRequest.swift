import Foundation
import NetExtCore

/// A request from a client to netextd. On the wire: `{"id": N, "method": "...", "params": {...}}`.
public enum ControlRequest: Sendable, Hashable {
    /// Must be the first request: the client's protocol version and app identifier.
    case hello(Hello)
    case listConfigurations
    case loadConfiguration(id: UUID)
    /// Saves a configuration; secrets travel beside it and go to the secret store.
    case saveConfiguration(SaveConfiguration)
    case removeConfiguration(id: UUID)
    case startConnection(StartConnection)
    case stopConnection(id: UUID)
    /// The status of one configuration, or of all visible ones.
    case getStatus(id: UUID?)
    /// Turns this connection into a notification stream as well.
    case subscribe
    case installProfile(InstallProfile)
    case removeProfile(identifier: String)
    case listProfiles
    case listProviders
    /// Delivers bytes to the running provider's `handleAppMessage` and returns its answer
    /// (Apple's `NETunnelProviderSession.sendProviderMessage`).
    case sendProviderMessage(ProviderMessageRequest)
    /// The content filter's state and counters (anyone may read them).
    case getFilterStatus
    /// The content filter's latest verdicts, oldest first (root or the admin group only: the
    /// entries name other users' destinations).
    case getFilterLog(limit: Int)
    /// The URL filter's verdict for a URL (anyone may ask; the answer names only that URL's verdict).
    case urlFilterVerdict(url: String)
    /// The URL filter's state and counters.
    case getURLFilterStatus

    public struct ProviderMessageRequest: Sendable, Hashable, Codable {
        public var id: UUID
        /// The message, base64 on the wire.
        public var data: Data
        public init(id: UUID, data: Data) {
            self.id = id
            self.data = data
        }
    }

    public struct Hello: Sendable, Hashable, Codable {
        public var version: Int
        public var appIdentifier: String
        public init(version: Int = ControlProtocol.version, appIdentifier: String) {
            self.version = version
            self.appIdentifier = appIdentifier
        }
    }

    public struct SaveConfiguration: Sendable, Hashable, Codable {
        public var configuration: Configuration
        /// A new password to store (replaces the referenced one); nil keeps it.
        public var password: String?
        public var sharedSecret: String?
        public init(configuration: Configuration, password: String? = nil, sharedSecret: String? = nil) {
            self.configuration = configuration
            self.password = password
            self.sharedSecret = sharedSecret
        }
    }

    public struct StartConnection: Sendable, Hashable, Codable {
        public var id: UUID
        /// Options handed to the provider's `startTunnel(options:)`.
        public var options: [String: JSONValue]
        public init(id: UUID, options: [String: JSONValue] = [:]) {
            self.id = id
            self.options = options
        }
    }

    public struct InstallProfile: Sendable, Hashable, Codable {
        /// The profile file's bytes (XML or binary property list), base64 on the wire.
        public var data: Data
        public init(data: Data) { self.data = data }
    }

    /// The method name on the wire.
    public var method: String {
        switch self {
        case .hello: "hello"
        case .listConfigurations: "listConfigurations"
        case .loadConfiguration: "loadConfiguration"
        case .saveConfiguration: "saveConfiguration"
        case .removeConfiguration: "removeConfiguration"
        case .startConnection: "startConnection"
        case .stopConnection: "stopConnection"
        case .getStatus: "getStatus"
        case .subscribe: "subscribe"
        case .installProfile: "installProfile"
        case .removeProfile: "removeProfile"
        case .listProfiles: "listProfiles"
        case .listProviders: "listProviders"
        case .sendProviderMessage: "sendProviderMessage"
        case .getFilterStatus: "getFilterStatus"
        case .getFilterLog: "getFilterLog"
        case .urlFilterVerdict: "urlFilterVerdict"
        case .getURLFilterStatus: "getURLFilterStatus"
        }
    }

    /// Whether the request changes state (and so needs root or the `netext` group).
    public var modifiesState: Bool {
        switch self {
        case .saveConfiguration, .removeConfiguration, .startConnection, .stopConnection, .installProfile, .removeProfile, .sendProviderMessage: true
        case .hello, .listConfigurations, .loadConfiguration, .getStatus, .subscribe, .listProfiles, .listProviders, .getFilterStatus, .getFilterLog, .urlFilterVerdict, .getURLFilterStatus: false
        }
    }
}

/// A request with its identifier, as framed on the wire.
public struct RequestEnvelope: Sendable, Hashable {
    public var id: Int
    public var request: ControlRequest
    public init(id: Int, request: ControlRequest) {
        self.id = id
        self.request = request
    }
}

extension RequestEnvelope: Codable {
    private enum CodingKeys: String, CodingKey { case id, method, params }
    private struct IDParams: Codable { var id: UUID }
    private struct OptionalIDParams: Codable { var id: UUID? }
    private struct IdentifierParams: Codable { var identifier: String }
    private struct Empty: Codable {}
    private struct LimitParams: Codable { var limit: Int }
    private struct URLParams: Codable { var url: String }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        let method = try container.decode(String.self, forKey: .method)
        switch method {
        case "hello": request = .hello(try container.decode(ControlRequest.Hello.self, forKey: .params))
        case "listConfigurations": request = .listConfigurations
        case "loadConfiguration": request = .loadConfiguration(id: try container.decode(IDParams.self, forKey: .params).id)
        case "saveConfiguration": request = .saveConfiguration(try container.decode(ControlRequest.SaveConfiguration.self, forKey: .params))
        case "removeConfiguration": request = .removeConfiguration(id: try container.decode(IDParams.self, forKey: .params).id)
        case "startConnection": request = .startConnection(try container.decode(ControlRequest.StartConnection.self, forKey: .params))
        case "stopConnection": request = .stopConnection(id: try container.decode(IDParams.self, forKey: .params).id)
        case "getStatus": request = .getStatus(id: try container.decodeIfPresent(OptionalIDParams.self, forKey: .params)?.id)
        case "subscribe": request = .subscribe
        case "installProfile": request = .installProfile(try container.decode(ControlRequest.InstallProfile.self, forKey: .params))
        case "removeProfile": request = .removeProfile(identifier: try container.decode(IdentifierParams.self, forKey: .params).identifier)
        case "listProfiles": request = .listProfiles
        case "listProviders": request = .listProviders
        case "sendProviderMessage": request = .sendProviderMessage(try container.decode(ControlRequest.ProviderMessageRequest.self, forKey: .params))
        case "getFilterStatus": request = .getFilterStatus
        case "getFilterLog": request = .getFilterLog(limit: try container.decode(LimitParams.self, forKey: .params).limit)
        case "urlFilterVerdict": request = .urlFilterVerdict(url: try container.decode(URLParams.self, forKey: .params).url)
        case "getURLFilterStatus": request = .getURLFilterStatus
        default:
            throw DecodingError.dataCorruptedError(forKey: .method, in: container, debugDescription: "unknown method '\(method)'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(request.method, forKey: .method)
        switch request {
        case .hello(let hello): try container.encode(hello, forKey: .params)
        case .loadConfiguration(let id), .removeConfiguration(let id), .stopConnection(let id):
            try container.encode(IDParams(id: id), forKey: .params)
        case .saveConfiguration(let save): try container.encode(save, forKey: .params)
        case .startConnection(let start): try container.encode(start, forKey: .params)
        case .getStatus(let id): try container.encode(OptionalIDParams(id: id), forKey: .params)
        case .installProfile(let install): try container.encode(install, forKey: .params)
        case .removeProfile(let identifier): try container.encode(IdentifierParams(identifier: identifier), forKey: .params)
        case .sendProviderMessage(let message): try container.encode(message, forKey: .params)
        case .getFilterLog(let limit): try container.encode(LimitParams(limit: limit), forKey: .params)
        case .urlFilterVerdict(let url): try container.encode(URLParams(url: url), forKey: .params)
        case .listConfigurations, .subscribe, .listProfiles, .listProviders, .getFilterStatus, .getURLFilterStatus: try container.encode(Empty(), forKey: .params)
        }
    }
}
