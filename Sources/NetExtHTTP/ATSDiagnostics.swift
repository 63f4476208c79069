import Foundation

/// Tries a load under the default rules and under each relaxation ATS offers, as
/// `nscurl --ats-diagnostics` does on macOS, to show which exception a server needs.
public enum ATSDiagnostics {
    /// One attempt: the policy it ran under and what happened.
    public struct Attempt: Sendable {
        /// "Default ATS", "NSExceptionMinimumTLSVersion = TLSv1.0", …
        public var name: String
        /// The `NSAppTransportSecurity` entries this attempt adds to the app's policy.
        public var exceptionKeys: [String]
        public var policy: ATSPolicy
        /// nil when the load passed.
        public var failure: HTTPLoadError?
        /// What the connection negotiated, when it passed.
        public var protocolName: String?
        public var tlsVersion: String?

        public var passed: Bool { failure == nil }
    }

    /// The attempts, in order: the app's policy as is, allow-all, then per-domain exceptions
    /// for each minimum TLS version with forward secrecy required or not and insecure loads
    /// allowed or not. `base` supplies trust, addresses and timeouts.
    public static func run(_ url: URL, base: URLSessionConfiguration) async -> [Attempt] {
        let host = (try? URLSession.origin(of: url).host) ?? (url.host ?? "")
        var attempts: [(String, [String], ATSPolicy)] = [("Default ATS", [], base.appTransportSecurity)]
        var allowAll = ATSPolicy()
        allowAll.allowsArbitraryLoads = true
        attempts.append(("Allow all loads", ["NSAllowsArbitraryLoads = true"], allowAll))
        for version in ATSTLSVersion.allCases.reversed() {
            for forwardSecrecy in [true, false] {
                for insecure in [false, true] {
                    var exception = ATSDomainException()
                    exception.minimumTLSVersion = version
                    exception.requiresForwardSecrecy = forwardSecrecy
                    exception.allowsInsecureHTTPLoads = insecure
                    var policy = ATSPolicy()
                    policy.exceptionDomains[host] = exception
                    var keys = version == .tls12 ? [] : ["NSExceptionMinimumTLSVersion = \(version.rawValue)"]
                    if !forwardSecrecy { keys.append("NSExceptionRequiresForwardSecrecy = false") }
                    if insecure { keys.append("NSExceptionAllowsInsecureHTTPLoads = true") }
                    let name = "TLS \(version.rawValue.dropFirst(4)) minimum" + (forwardSecrecy ? "" : ", no forward secrecy") + (insecure ? ", insecure loads allowed" : "")
                    attempts.append((name, keys.map { "NSExceptionDomains › \(host) › \($0)" }, policy))
                }
            }
        }
        var results: [Attempt] = []
        for (name, keys, policy) in attempts {
            var configuration = base
            configuration.appTransportSecurity = policy
            configuration.diagnosticLog = nil
            configuration.maximumRedirects = 0
            let session = URLSession(configuration: configuration)
            var attempt = Attempt(name: name, exceptionKeys: keys, policy: policy)
            do {
                let (_, response) = try await session.data(from: url)
                attempt.protocolName = response.metrics.networkProtocolName
                attempt.tlsVersion = response.metrics.negotiatedTLSProtocolVersion
            } catch .tooManyRedirects {
                // A redirect is an answer: the connection passed.
            } catch {
                attempt.failure = error
            }
            await session.invalidateAndCancel()
            results.append(attempt)
        }
        return results
    }

    /// The passing per-domain exception that lifts least: insecure loads weigh most, then
    /// forward secrecy, then each TLS version given up (a raised minimum lifts nothing).
    public static func leastException(_ attempts: [Attempt]) -> Attempt? {
        func weight(_ attempt: Attempt) -> Int {
            guard let exception = attempt.policy.exceptionDomains.values.first else { return .max }
            var weight = exception.allowsInsecureHTTPLoads ? 100 : 0
            if !exception.requiresForwardSecrecy { weight += 10 }
            switch exception.minimumTLSVersion {
            case .tls10: weight += 2
            case .tls11: weight += 1
            case .tls12: break
            case .tls13: weight += 50
            }
            return weight
        }
        return attempts.dropFirst(2).filter(\.passed).min { weight($0) < weight($1) }
    }
}
