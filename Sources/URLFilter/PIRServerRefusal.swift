import PIRProtobuf

/// What a PIR server's refusal asks the client to do. Two refusals mean "your state is stale,
/// set up again": the configuration id is no longer served, or the evaluation key is no longer
/// held. Servers say so in three ways, all recognised here:
/// - Apple's pir-service-example (main): 410 or 400 with its `Error` protobuf message
///   (`config_version_not_found` = field 1, `evaluation_key_not_found` = field 2, so the
///   missing-key body is the bytes `12 00`);
/// - Apple's release/1.1: 400 with the text "Evaluation key not found";
/// - NetExt before it answered Apple's way: 409 with a sentence.
public enum PIRServerRefusal: Equatable, Sendable {
    /// Fetch the configuration again (and upload a key for it).
    case configurationGone
    /// Upload the evaluation key again.
    case evaluationKeyNotFound
    /// Anything else: not recoverable by setting up again.
    case other

    public init(status: Int, body: [UInt8]) {
        switch status {
        case 410:
            self = .configurationGone
        case 409:
            self = .evaluationKeyNotFound
        case 400:
            if let error = try? ProtoError(serializedBytes: body), let type = error.errorType {
                switch type {
                case .configVersionNotFound: self = .configurationGone
                case .evaluationKeyNotFound: self = .evaluationKeyNotFound
                case .invalidRequest, .internalError: self = .other
                }
            } else if String(decoding: body.prefix(200), as: UTF8.self).localizedCaseInsensitiveContains("evaluation key not found") {
                self = .evaluationKeyNotFound
            } else {
                self = .other
            }
        default:
            self = .other
        }
    }

    /// Whether setting up again (configuration, then key) may succeed.
    public var asksToSetUpAgain: Bool { self != .other }
}
