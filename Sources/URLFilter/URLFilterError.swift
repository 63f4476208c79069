/// Errors of the URL filter's keys, database building and PIR client.
public enum URLFilterError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidURL(String, reason: String)
    case invalidListLine(line: Int, reason: String)
    case server(status: Int, message: String)
    case transport(String)
    case protocolMismatch(String)
    case io(path: String, reason: String)

    public var description: String {
        switch self {
        case let .invalidURL(url, reason): "invalid URL '\(url)': \(reason)"
        case let .invalidListLine(line, reason): "line \(line): \(reason)"
        case let .server(status, message): "server answered \(status): \(message)"
        case let .transport(reason): "cannot reach the server: \(reason)"
        case let .protocolMismatch(reason): "unexpected answer: \(reason)"
        case let .io(path, reason): "\(path): \(reason)"
        }
    }
}
