/// Why an encrypted upstream gave no answer, as a sentence for the log.
public enum EncryptedDNSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Whether asking once more, on a new stream or connection, may succeed.
    var isWorthRetrying: Bool {
        switch self {
        case .connectionClosed, .streamReset: true
        default: false
        }
    }

    /// The query could not be sent as it was (it does not parse).
    case malformedQuery(String)
    /// No connection to the server: refused, unreachable, or TLS failed (the reason says which).
    case connectFailed(server: String, reason: String)
    /// The connection closed before the answer came, twice.
    case connectionClosed(server: String)
    /// No answer within the deadline.
    case timedOut(server: String, milliseconds: Int)
    /// An answer came that is not the response to the question asked.
    case mismatchedAnswer(server: String, reason: String)
    /// A DNS-over-HTTPS server answered with something other than a DNS message.
    case httpFailure(server: String, reason: String)
    /// A DNS-over-HTTPS server (or Oblivious DoH proxy or target) answered with a status other than 2xx.
    case httpStatus(server: String, status: Int)
    /// An Oblivious DoH answer that could not be opened, or a configuration that cannot be used.
    case obliviousFailure(server: String, reason: String)
    /// Too many queries are waiting for this server.
    case busy(server: String)
    /// A DNS-over-HTTPS server reset the query's stream (RST_STREAM).
    case streamReset(server: String, code: String)
    /// The PEM file of trusted CAs cannot be used.
    case unusableCAFile(path: String, reason: String)
    /// The client identity file cannot be used (missing, readable by others, no certificate or key).
    case unusableClientIdentity(path: String, reason: String)

    public var description: String {
        switch self {
        case .malformedQuery(let reason): "the query cannot be sent: \(reason)"
        case .connectFailed(let server, let reason): "cannot reach the DNS server \(server): \(reason)"
        case .connectionClosed(let server): "the DNS server \(server) closed the connection before answering"
        case .timedOut(let server, let milliseconds): "the DNS server \(server) did not answer within \(milliseconds) ms"
        case .mismatchedAnswer(let server, let reason): "the DNS server \(server) sent an answer to another question (\(reason)); it was dropped"
        case .httpFailure(let server, let reason): "the DNS-over-HTTPS server \(server) did not answer with a DNS message: \(reason)"
        case .httpStatus(let server, let status): "the DNS-over-HTTPS server \(server) answered with HTTP status \(status), not a DNS message"
        case .obliviousFailure(let server, let reason): "Oblivious DoH through \(server) failed: \(reason)"
        case .busy(let server): "too many queries are waiting for the DNS server \(server)"
        case .streamReset(let server, let code): "the DNS-over-HTTPS server \(server) reset the query's stream (\(code))"
        case .unusableCAFile(let path, let reason): "the CA file \(path) cannot be used: \(reason)"
        case .unusableClientIdentity(let path, let reason): "the client identity \(path) cannot be used: \(reason)"
        }
    }
}
