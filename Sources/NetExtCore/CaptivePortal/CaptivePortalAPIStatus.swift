import Foundation

/// A captive portal API server's answer (RFC 8908 §5, media type `application/captive+json`):
/// whether this client is held captive, where a person logs in, and what is left of the session.
/// Unknown keys are ignored (RFC 8908 §5 registers keys with IANA; clients skip those they do not
/// know); a known key of the wrong type refuses the whole answer, naming the key.
public struct CaptivePortalAPIStatus: Sendable, Hashable, Codable {
    /// `captive` (required): the client has not yet met the portal's conditions.
    public var isCaptive: Bool
    /// `user-portal-url`: the web page where a person logs in; HTTPS only (RFC 8908 §5: it MUST
    /// be accessed over TLS).
    public var userPortalURL: URL?
    /// `venue-info-url`: the operator's page about the venue.
    public var venueInfoURL: URL?
    /// `can-extend-session`: the portal page can lengthen a session that is running out.
    public var canExtendSession: Bool
    /// `seconds-remaining`: seconds until the session ends (RFC 8908 §5: an integer).
    public var secondsRemaining: Int?
    /// `bytes-remaining`: bytes the session may still carry.
    public var bytesRemaining: Int?

    public init(isCaptive: Bool, userPortalURL: URL? = nil, venueInfoURL: URL? = nil, canExtendSession: Bool = false, secondsRemaining: Int? = nil, bytesRemaining: Int? = nil) {
        self.isCaptive = isCaptive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.canExtendSession = canExtendSession
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
    }

    /// The media type of the API (RFC 8908 §5, §8.2).
    public static let mediaType = "application/captive+json"
    /// The largest answer read (an API answer is a few hundred bytes).
    public static let maximumSize = 64 << 10

    /// Parses an API answer's body.
    public static func parse(_ body: [UInt8]) throws(CaptivePortalError) -> CaptivePortalAPIStatus {
        guard body.count <= maximumSize else { throw CaptivePortalError("the captive portal API's answer is \(body.count) bytes; at most \(maximumSize) are read") }
        let document: JSONValue
        do { document = try JSONDecoder().decode(JSONValue.self, from: Data(body)) } catch {
            throw CaptivePortalError("the captive portal API's answer is not JSON (RFC 8908 §5)")
        }
        guard case .object(let fields) = document else { throw CaptivePortalError("the captive portal API's answer is not a JSON object (RFC 8908 §5)") }
        guard let captive = fields["captive"] else { throw CaptivePortalError("the captive portal API's answer has no \"captive\" key (required, RFC 8908 §5)") }
        return CaptivePortalAPIStatus(
            isCaptive: try boolean(captive, key: "captive"),
            userPortalURL: try fields["user-portal-url"].map { value throws(CaptivePortalError) in try url(value, key: "user-portal-url", httpsOnly: true) },
            venueInfoURL: try fields["venue-info-url"].map { value throws(CaptivePortalError) in try url(value, key: "venue-info-url", httpsOnly: false) },
            canExtendSession: try fields["can-extend-session"].map { value throws(CaptivePortalError) in try boolean(value, key: "can-extend-session") } ?? false,
            secondsRemaining: try fields["seconds-remaining"].map { value throws(CaptivePortalError) in try count(value, key: "seconds-remaining") },
            bytesRemaining: try fields["bytes-remaining"].map { value throws(CaptivePortalError) in try count(value, key: "bytes-remaining") })
    }

    private static func boolean(_ value: JSONValue, key: String) throws(CaptivePortalError) -> Bool {
        guard let flag = value.boolValue else { throw CaptivePortalError("\"\(key)\" in the captive portal API's answer must be true or false") }
        return flag
    }

    private static func count(_ value: JSONValue, key: String) throws(CaptivePortalError) -> Int {
        guard let number = value.numberValue else { throw CaptivePortalError("\"\(key)\" in the captive portal API's answer must be a number") }
        guard number.isFinite, number >= 0, number.rounded() == number, number <= 9_007_199_254_740_992 else {
            throw CaptivePortalError("\"\(key)\" in the captive portal API's answer must be a whole number of at least 0")
        }
        return Int(number)
    }

    private static func url(_ value: JSONValue, key: String, httpsOnly: Bool) throws(CaptivePortalError) -> URL {
        guard let text = value.stringValue else { throw CaptivePortalError("\"\(key)\" in the captive portal API's answer must be a string") }
        return try CaptivePortalURL.parse(text, what: "\"\(key)\" in the captive portal API's answer", httpsOnly: httpsOnly)
    }
}

/// The URL checks shared by the API's answer and the network's announcement.
enum CaptivePortalURL {
    /// An absolute http(s) URL with a host, at most 2,048 bytes; https only when `httpsOnly`.
    static func parse(_ text: String, what: String, httpsOnly: Bool) throws(CaptivePortalError) -> URL {
        guard text.utf8.count <= 2048, let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else {
            throw CaptivePortalError("\(what) is not an absolute URL with a host")
        }
        if scheme == "https" || (!httpsOnly && scheme == "http") { return url }
        throw CaptivePortalError("\(what) must be an \(httpsOnly ? "https" : "http or https") URL (RFC 8908 §4.1, §5), not \(scheme)")
    }
}
