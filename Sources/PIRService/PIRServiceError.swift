import HomomorphicEncryption
import PIRProtobuf
import PrivateInformationRetrieval

/// Errors of the PIR service; each maps to an HTTP status and names what was wrong. Never
/// carries query contents.
public enum PIRServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedRequest(String)
    case unknownUseCase(String)
    case missingUserIdentifier
    case evaluationKeyNotFound
    case configurationChanged(useCase: String)
    case requestTooLarge(bytes: Int, limit: Int)
    case databaseFile(path: String, reason: String)
    case pir(PirError)

    /// The HTTP status this error is answered with.
    public var httpStatus: Int {
        switch self {
        case .malformedRequest, .missingUserIdentifier, .pir: 400
        case .unknownUseCase: 404
        // As Apple's pir-service-example answers (and Apple's clients expect): 410 for a
        // configuration id the server no longer serves, 400 when the client's key is not held.
        case .configurationChanged: 410
        case .evaluationKeyNotFound: 400
        case .requestTooLarge: 413
        case .databaseFile: 500
        }
    }

    /// The two answers a client acts on are sent as Apple's `Error` message (what its clients
    /// parse: fetch the configuration again, upload the key again), not as a sentence.
    public var protocolError: ProtoError? {
        switch self {
        case .evaluationKeyNotFound:
            var error = ProtoError()
            error.evaluationKeyNotFound = .init()
            return error
        case .configurationChanged:
            var error = ProtoError()
            error.configVersionNotFound = .init()
            return error
        default:
            return nil
        }
    }

    public var description: String {
        switch self {
        case let .malformedRequest(reason): "malformed request: \(reason)"
        case let .unknownUseCase(name): "unknown use case '\(name)'"
        case .missingUserIdentifier: "the User-Identifier header is required"
        case .evaluationKeyNotFound: "no evaluation key stored for this user and configuration; upload one to /key"
        case let .configurationChanged(useCase): "the configuration of '\(useCase)' changed; fetch /config again"
        case let .requestTooLarge(bytes, limit): "request body of \(bytes) bytes exceeds the \(limit)-byte limit"
        case let .databaseFile(path, reason): "database file \(path): \(reason)"
        case let .pir(error): error.description
        }
    }
}
