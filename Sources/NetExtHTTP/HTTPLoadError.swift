/// Why a load failed, in sentences for people.
public enum HTTPLoadError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidURL(String)
    case invalidConfiguration(String)
    /// App Transport Security did not allow it.
    case refused(ATSRefusal)
    case cannotConnect(host: String, reason: String)
    /// TLS failed for a reason ATS does not govern (an untrusted, expired or misnamed certificate).
    case tlsFailed(host: String, reason: String)
    case timedOut(url: String, seconds: Double)
    case tooManyRedirects(url: String, limit: Int)
    case badServerResponse(url: String, reason: String)
    case responseTooLarge(url: String, limit: Int)
    /// The URL filter did not let it load.
    case deniedByURLFilter(url: String, reason: String)
    /// A download broke off; ``URLSession/download(resumingFrom:progress:)`` goes on with it.
    case interrupted(reason: String, resumeData: DownloadResumeData)
    case cancelled
    /// The user's transfer service (background sessions) could not be reached or started.
    case transferServiceUnavailable(String)
    /// The transfer service refused a command (an unknown task, an unreadable upload file, …).
    case transferRefused(String)
    /// A background task failed; the sentence is the transfer service's.
    case transferFailed(String)

    public var description: String {
        switch self {
        case .invalidURL(let text): "'\(text)' is not an http or https URL with a host."
        case .invalidConfiguration(let reason): "The session cannot be set up: \(reason)."
        case .refused(let refusal): refusal.description
        case .cannotConnect(let host, let reason): "Cannot connect to \(host): \(reason)."
        case .tlsFailed(let host, let reason): "TLS with \(host) failed: \(reason)."
        case .timedOut(let url, let seconds): "\(url) did not answer within \(Self.seconds(seconds))."
        case .tooManyRedirects(let url, let limit): "\(url) redirected more than \(limit) times."
        case .badServerResponse(let url, let reason): "\(url) gave no usable answer: \(reason)."
        case .responseTooLarge(let url, let limit): "\(url) answered with more than \(limit) bytes, the session's limit."
        case .deniedByURLFilter(let url, let reason): "\(url) was not loaded: \(reason)."
        case .interrupted(let reason, let resume): "The download of \(resume.url.absoluteString) stopped after \(resume.bytesReceived) bytes (\(reason)); it can be resumed."
        case .cancelled: "The load was cancelled."
        case .transferServiceUnavailable(let reason): "The background transfer service is not available: \(reason)."
        case .transferRefused(let reason): "The background transfer service refused: \(reason)."
        case .transferFailed(let reason): reason
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
