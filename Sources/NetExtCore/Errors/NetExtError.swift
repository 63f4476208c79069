/// The one error type of NetExt's configuration and connection API, mirroring Apple's
/// `NEVPNError` / configuration errors. It crosses the control protocol as `{code, message}`.
///
/// Messages name the culprit (the key, the file, the configuration) and never contain secrets.
public struct NetExtError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// What kind of failure this is. Raw values follow Apple's error codes where one exists.
    public enum Code: Int, Sendable, Hashable, Codable, CaseIterable {
        /// The configuration is invalid (a missing or malformed field).
        case configurationInvalid = 1
        /// The configuration is not enabled.
        case configurationDisabled = 2
        /// The connection failed.
        case connectionFailed = 3
        /// The configuration was changed by someone else since it was loaded.
        case configurationStale = 4
        /// The configuration store could not be read or written.
        case configurationReadWriteFailed = 5
        /// There is no such configuration (or the caller may not see it).
        case configurationUnknown = 6
        /// The caller may not do this (Apple's "permission denied", error 10).
        case permissionDenied = 10
        /// netextd is not running or its socket cannot be reached (Linux addition).
        case daemonUnavailable = 100
        /// The peer speaks another control-protocol version, or sent a malformed message.
        case protocolError = 101
        /// A provider is missing or misbehaved (Linux addition).
        case providerFailed = 102
        /// A request waited past its deadline.
        case timedOut = 103

        /// The protocol's name for the code, e.g. `configurationStale`.
        public var name: String {
            switch self {
            case .configurationInvalid: "configurationInvalid"
            case .configurationDisabled: "configurationDisabled"
            case .connectionFailed: "connectionFailed"
            case .configurationStale: "configurationStale"
            case .configurationReadWriteFailed: "configurationReadWriteFailed"
            case .configurationUnknown: "configurationUnknown"
            case .permissionDenied: "permissionDenied"
            case .daemonUnavailable: "daemonUnavailable"
            case .protocolError: "protocolError"
            case .providerFailed: "providerFailed"
            case .timedOut: "timedOut"
            }
        }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.name): \(message)" }

    public static func invalid(_ message: String) -> NetExtError { .init(.configurationInvalid, message) }
    public static func unknown(_ message: String) -> NetExtError { .init(.configurationUnknown, message) }
    public static func stale(_ message: String) -> NetExtError { .init(.configurationStale, message) }
    public static func readWrite(_ message: String) -> NetExtError { .init(.configurationReadWriteFailed, message) }
    public static func permissionDenied(_ message: String) -> NetExtError { .init(.permissionDenied, message) }
    public static func connectionFailed(_ message: String) -> NetExtError { .init(.connectionFailed, message) }
    public static func disabled(_ message: String) -> NetExtError { .init(.configurationDisabled, message) }
}

extension NetExtError.Code {
    /// Looks a code up by its protocol name.
    public init?(name: String) {
        guard let code = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = code
    }

    /// On the wire a code is its name, so that added codes never collide with old numbers.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let code = Self(name: name) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "unknown error code '\(name)'")
        }
        self = code
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
