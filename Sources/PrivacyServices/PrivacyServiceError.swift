/// Errors of the Privacy Pass and Oblivious HTTP services; each names what was wrong and never
/// carries a credential, token or payload.
public enum PrivacyServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key or credential file that cannot be read or parsed.
    case file(path: String, reason: String)
    /// A command-line or configuration value that cannot work.
    case invalidSetting(name: String, reason: String)
    /// The spent-token database failed.
    case database(String)

    public var description: String {
        switch self {
        case let .file(path, reason): "\(path): \(reason)"
        case let .invalidSetting(name, reason): "\(name): \(reason)"
        case let .database(reason): "spent-token database: \(reason)"
        }
    }
}
