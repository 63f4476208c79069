import Foundation

/// How a URL filter's service URLs (the PIR server's and the Privacy Pass issuer's) must be
/// written for a deployment, as Apple requires of apps distributed through the App Store
/// (`apple/pir-service-example`, Onboarding.md, "URLs"): HTTPS on the default port, and each
/// service named by a host name of its own, without a path, a trailing '/', a query or
/// credentials: `https://pir.example.net`, not `https://example.net/pir`. Custom paths for the
/// service and issuer URLs stopped being supported in iOS and macOS 26.4; Apple exempts apps
/// installed from Xcode (paths, ports and http allowed for development), and NetExt's
/// exemption is a configuration's ``URLFilterProtocol/allowsDevelopmentURLs``.
public enum URLFilterServiceURL {
    /// What is wrong with `value` as a deployment's service URL, as a sentence beginning with
    /// `field`; nil when it is a host-only https URL.
    public static func deploymentProblem(_ value: String, field: String) -> String? {
        guard let components = URLComponents(string: value), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty
        else { return "\(field): '\(value)' is not a URL" }
        let shape = "(e.g. https://pir.example.net)"
        if scheme != "https" {
            return "\(field): '\(value)' must use https; http is accepted only in a development configuration (--development)"
        }
        if components.user != nil || components.password != nil {
            return "\(field): '\(value)' must not carry a user name or password (the credential is pirAuthenticationToken)"
        }
        if let port = components.port, port != 443 {
            return "\(field): '\(value)' names port \(port); a deployment serves on 443, the https default (other ports only in a development configuration)"
        }
        if !components.percentEncodedPath.isEmpty {
            let what = components.percentEncodedPath == "/" ? "ends with '/'" : "has the path '\(components.percentEncodedPath)'"
            return "\(field): '\(value)' \(what); since iOS and macOS 26.4 a service is named by a host name of its own with no path or trailing '/' \(shape)"
        }
        if components.percentEncodedQuery != nil || components.percentEncodedFragment != nil {
            return "\(field): '\(value)' must not have a query or fragment \(shape)"
        }
        if IPAddressSyntax.isValid(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))) {
            return "\(field): '\(value)' names an address; a deployment names each service by a DNS host name \(shape)"
        }
        return nil
    }
}
