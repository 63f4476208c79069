import Foundation

/// Where a server asks for credentials (Foundation's `URLProtectionSpace`): its host, port,
/// scheme, realm and authentication method.
public struct URLProtectionSpace: Sendable, Hashable {
    /// Foundation's `NSURLAuthenticationMethod…` names, the ones NetExtHTTP answers.
    public enum AuthenticationMethod: String, Sendable, Hashable {
        /// `NSURLAuthenticationMethodHTTPBasic` (RFC 7617).
        case httpBasic = "NSURLAuthenticationMethodHTTPBasic"
        /// `NSURLAuthenticationMethodHTTPDigest` (RFC 7616: MD5, SHA-256 and their -sess forms).
        case httpDigest = "NSURLAuthenticationMethodHTTPDigest"
        /// `NSURLAuthenticationMethodServerTrust`: the session asks the delegate to judge the
        /// server's certificate (``URLProtectionSpace/serverTrust``) once per new connection.
        case serverTrust = "NSURLAuthenticationMethodServerTrust"
    }

    public var host: String
    public var port: Int
    /// "http" or "https".
    public var `protocol`: String
    /// The challenge's `realm` parameter (RFC 9110 §11.5), nil when it named none.
    public var realm: String?
    public var authenticationMethod: AuthenticationMethod
    /// The server's certificates and default evaluation's verdict, for `.serverTrust`.
    public var serverTrust: ServerTrust?
    /// Whether the credentials would cross the network in the clear (an http URL).
    public var receivesCredentialSecurely: Bool { `protocol` == "https" }
}

/// A server's request for credentials (Foundation's `URLAuthenticationChallenge`): a 401 answer
/// with a `WWW-Authenticate` challenge NetExtHTTP can answer.
public struct URLAuthenticationChallenge: Sendable {
    public var protectionSpace: URLProtectionSpace
    /// How many credentials this load has been refused before (0 the first time).
    public var previousFailureCount: Int
    /// The 401 answer; nil for a server trust challenge, which comes before any answer.
    public var failureResponse: HTTPURLResponse?
    /// The credential the session would send on its own: the space's default in the session's
    /// credential storage, or the one just refused.
    public var proposedCredential: URLCredential? = nil
}

extension URLSession {
    /// What a delegate does with a challenge (Foundation's `AuthChallengeDisposition`).
    public enum AuthChallengeDisposition: Sendable, Hashable {
        /// Send the credential returned with it and try again.
        case useCredential
        /// What the session does without a delegate: the 401 answer is the load's answer.
        case performDefaultHandling
        /// Fail the load with ``HTTPLoadError/cancelled``.
        case cancelAuthenticationChallenge
        /// This way of authenticating is not wanted: the 401 answer is the load's answer.
        case rejectProtectionSpace
    }
}

/// One challenge of a `WWW-Authenticate` field (RFC 9110 §11.6.1, §11.2): its scheme and its
/// parameters (names lowercased, quoted values unescaped). A token68 challenge (Negotiate's
/// blob) has no parameters here.
struct HTTPChallenge: Equatable {
    var scheme: String
    var parameters: [String: String]

    /// Every challenge in `values`, in order: a field may carry several, and a quoted parameter
    /// may hold commas. Never fails: what cannot be read ends that field's challenges.
    static func all(in values: [String]) -> [HTTPChallenge] {
        var challenges: [HTTPChallenge] = []
        for value in values {
            var rest = Substring(value)
            while !rest.isEmpty {
                rest = rest.drop { $0 == " " || $0 == "," }
                let scheme = rest.prefix { $0 != " " && $0 != "," }
                guard !scheme.isEmpty, !scheme.contains("=") else { break }
                rest = rest.dropFirst(scheme.count)
                // The challenge's parameters run to the next scheme: a token not followed by '='.
                var parameters: [String: String] = [:]
                while true {
                    let trimmed = rest.drop { $0 == " " || $0 == "," }
                    let name = trimmed.prefix { $0 != "=" && $0 != " " && $0 != "," }
                    let afterName = trimmed.dropFirst(name.count).drop { $0 == " " }
                    guard !name.isEmpty, afterName.first == "=" else { break }
                    var valueText = afterName.dropFirst().drop { $0 == " " }
                    var parameter = ""
                    if valueText.first == "\"" {
                        valueText = valueText.dropFirst()
                        var escaped = false
                        var end = valueText.endIndex
                        for index in valueText.indices {
                            let character = valueText[index]
                            if escaped { parameter.append(character); escaped = false; continue }
                            if character == "\\" { escaped = true; continue }
                            if character == "\"" { end = index; break }
                            parameter.append(character)
                        }
                        rest = end < valueText.endIndex ? valueText[valueText.index(after: end)...] : valueText[valueText.endIndex...]
                    } else {
                        parameter = String(valueText.prefix { $0 != "," && $0 != " " })
                        rest = valueText.dropFirst(parameter.count)
                    }
                    parameters[name.lowercased()] = parameter
                }
                challenges.append(HTTPChallenge(scheme: String(scheme), parameters: parameters))
            }
        }
        return challenges
    }
}

/// Which challenge of a 401 the session answers: the first Digest challenge it can compute
/// (RFC 7616 §3.7: the server lists them in its order of preference), else Basic.
enum HTTPAuthentication {
    /// The challenge answered, its protection space's method and realm; nil when none can be.
    static func choose(in values: [String]) -> (method: URLProtectionSpace.AuthenticationMethod, realm: String?, digest: DigestChallenge?)? {
        let challenges = HTTPChallenge.all(in: values)
        for challenge in challenges where challenge.scheme.lowercased() == "digest" {
            if let digest = DigestChallenge(challenge) { return (.httpDigest, digest.realm, digest) }
        }
        if let basic = challenges.first(where: { $0.scheme.lowercased() == "basic" }) { return (.httpBasic, basic.parameters["realm"], nil) }
        return nil
    }
}
