import Foundation

/// An HTTP connectivity check, as NetworkManager's: a plain-HTTP URL whose real answer is known,
/// so that any other answer — a redirect, a login page, 511 — means something on the path
/// intercepts the traffic. Redirects are not followed.
public struct ConnectivityProbe: Sendable, Hashable, Codable {
    /// The URL fetched (no default: nothing is probed unless an administrator names one).
    public var url: URL
    /// What the body of the real answer starts with; nil: the real answer is 204 No Content
    /// (the `generate_204` convention).
    public var expectedResponse: String?

    public init(url: URL, expectedResponse: String? = nil) {
        self.url = url
        self.expectedResponse = expectedResponse
    }

    /// What an answer says.
    public enum Verdict: Sendable, Hashable, Codable {
        /// The real answer: the network lets traffic through.
        case online
        /// Something else answered: a portal. `redirect`: where it sent the client, if it did.
        case captive(redirect: URL?)
    }

    /// Checks a probe URL given by a person: absolute http(s) with a host.
    public static func validated(url text: String, expectedResponse: String?) throws(CaptivePortalError) -> ConnectivityProbe {
        let url = try CaptivePortalURL.parse(text, what: "the connectivity check URL", httpsOnly: false)
        if let expectedResponse, expectedResponse.utf8.count > 4096 {
            throw CaptivePortalError("the connectivity check's expected response is \(expectedResponse.utf8.count) bytes; at most 4096")
        }
        return ConnectivityProbe(url: url, expectedResponse: expectedResponse)
    }

    /// The verdict on an answer: `status`, its `Location` header, its body.
    public func verdict(status: Int, location: String?, body: [UInt8]) -> Verdict {
        if let expectedResponse {
            if (200..<300).contains(status), body.starts(with: Array(expectedResponse.utf8)) { return .online }
        } else if status == 204 {
            return .online
        }
        // RFC 6585 §6 (511 Network Authentication Required) and 3xx both point at the portal.
        let redirect = (300..<400).contains(status) ? location.flatMap { URL(string: $0, relativeTo: url)?.absoluteURL } : nil
        return .captive(redirect: redirect)
    }
}
