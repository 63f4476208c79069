/// An app's App Transport Security policy: the `NSAppTransportSecurity` dictionary of its
/// Info.plist, same keys and meanings (Apple's "Information Property List" reference,
/// NSAppTransportSecurity). ``ATSPolicy/strict`` — no dictionary — is what every load gets
/// by default: HTTPS only, TLS 1.2 or later with forward secrecy, strong certificates.
public struct ATSPolicy: Sendable, Equatable, Codable {
    /// `NSAllowsArbitraryLoads`: ATS lifted for every domain not named in ``exceptionDomains``.
    /// Ignored when ``allowsLocalNetworking`` (or one of the media/web-content keys) is present,
    /// as on Apple platforms since iOS 10.
    public var allowsArbitraryLoads = false
    /// `NSAllowsLocalNetworking`: ATS lifted for unqualified names, `.local` names and IP
    /// literals of loopback, private and link-local ranges.
    public var allowsLocalNetworking = false
    /// `NSAllowsArbitraryLoadsForMedia` / `…InWebContent` were present (they lift nothing here:
    /// no media or web view loads through NetExtHTTP; they still switch off arbitrary loads).
    public var hasMediaOrWebContentKey = false
    /// `NSExceptionDomains`, keyed by lower-case domain.
    public var exceptionDomains: [String: ATSDomainException] = [:]
    /// `NSPinnedDomains`, keyed by lower-case domain.
    public var pinnedDomains: [String: ATSPinnedDomain] = [:]

    /// No dictionary: every rule applies.
    public static let strict = ATSPolicy()

    public init() {}

    /// Whether `NSAllowsArbitraryLoads` is in force (present, and not switched off by a
    /// local-networking, media or web-content key).
    public var arbitraryLoadsInForce: Bool {
        allowsArbitraryLoads && !allowsLocalNetworking && !hasMediaOrWebContentKey
    }
}

/// One `NSExceptionDomains` entry.
public struct ATSDomainException: Sendable, Equatable, Codable {
    /// `NSIncludesSubdomains`.
    public var includesSubdomains = false
    /// `NSExceptionAllowsInsecureHTTPLoads`: cleartext HTTP allowed, and the certificate
    /// strength rules (key size, SHA-2 signatures, transparency) lifted; the certificate must
    /// still be valid for the name and signed by a trusted authority.
    public var allowsInsecureHTTPLoads = false
    /// `NSExceptionMinimumTLSVersion` (default TLS 1.2).
    public var minimumTLSVersion = ATSTLSVersion.tls12
    /// `NSExceptionRequiresForwardSecrecy` (default true).
    public var requiresForwardSecrecy = true
    /// `NSRequiresCertificateTransparency` (default false).
    public var requiresCertificateTransparency = false

    public init() {}
}

/// One `NSPinnedDomains` entry: SHA-256 of SubjectPublicKeyInfo, base64 (`SPKI-SHA256-BASE64`).
public struct ATSPinnedDomain: Sendable, Equatable, Codable {
    /// `NSIncludesSubdomains`.
    public var includesSubdomains = false
    /// `NSPinnedLeafIdentities`: the server's own certificate must have one of these keys.
    public var leafIdentities: Set<String> = []
    /// `NSPinnedCAIdentities`: a CA certificate of the chain must have one of these keys.
    public var caIdentities: Set<String> = []

    public init() {}
}

/// The TLS versions `NSExceptionMinimumTLSVersion` names.
public enum ATSTLSVersion: String, Sendable, Comparable, CaseIterable, Codable {
    case tls10 = "TLSv1.0"
    case tls11 = "TLSv1.1"
    case tls12 = "TLSv1.2"
    case tls13 = "TLSv1.3"

    private var order: Int { Self.allCases.firstIndex(of: self)! }
    public static func < (left: Self, right: Self) -> Bool { left.order < right.order }
}
