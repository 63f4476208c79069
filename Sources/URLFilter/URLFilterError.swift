/// Errors of the URL filter's keys, database building and PIR client.
public enum URLFilterError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidURL(String, reason: String)
    case invalidListLine(line: Int, reason: String)
    case server(status: Int, message: String)
    /// The server no longer holds what this client set up (its configuration or evaluation key).
    case staleSetup(PIRServerRefusal)
    case transport(String)
    case protocolMismatch(String)
    case io(path: String, reason: String)

    public var description: String {
        switch self {
        case let .invalidURL(url, reason): "invalid URL '\(url)': \(reason)"
        case let .invalidListLine(line, reason): "line \(line): \(reason)"
        case let .server(status, message): "server answered \(status): \(message)"
        case .staleSetup(.configurationGone): "the server no longer serves this configuration"
        case .staleSetup: "the server no longer holds this client's evaluation key"
        case let .transport(reason): "cannot reach the server: \(reason)"
        case let .protocolMismatch(reason): "unexpected answer: \(reason)"
        case let .io(path, reason): "\(path): \(reason)"
        }
    }
}
