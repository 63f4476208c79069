/// How a ``URLSession`` loads: its App Transport Security policy, whom it trusts, timeouts and
/// limits. The names follow Foundation's `URLSessionConfiguration`.
public struct URLSessionConfiguration: Sendable {
    /// The app's `NSAppTransportSecurity` policy (``ATSPolicy/strict`` when the app has none).
    public var appTransportSecurity = ATSPolicy.strict
    /// Whom servers' certificates must be signed by.
    public var trust = HTTPTrust.system
    /// `timeoutIntervalForRequest`: how long a load may go without a byte of its answer, in
    /// seconds (an idle limit, as Foundation's: a long download is not cut off while it moves).
    public var timeoutIntervalForRequest: Double = 60
    /// `timeoutIntervalForResource`: how long a background transfer may take in all, retries
    /// included, in seconds (7 days, as Foundation's default).
    public var timeoutIntervalForResource: Double = 7 * 24 * 3600
    /// A background session's identifier (``background(withIdentifier:)``), nil for others.
    public private(set) var identifier: String?
    /// Where a background session finds the user's transfer service (Linux addition; the
    /// default is `$NETEXT_TRANSFERS_SOCKET`, else `$XDG_RUNTIME_DIR/netext/transfers.sock`).
    public var transferServiceSocket = BackgroundTransferPaths.socket
    /// How long opening a connection may take, in seconds.
    public var timeoutIntervalForConnect: Double = 10
    /// Whether HTTP/2 is offered by ALPN (HTTP/1.1 is the fallback either way).
    public var allowsHTTP2 = true
    /// `httpMaximumConnectionsPerHost`: HTTP/1.1 connections open at once to one origin (an
    /// HTTP/2 origin gets one connection whatever this is).
    public var httpMaximumConnectionsPerHost = 6
    /// The most bytes of a body a data task holds in memory.
    public var maximumResponseBytes = 64 << 20
    /// The most redirects followed before a load fails.
    public var maximumRedirects = 10
    /// `httpAdditionalHeaders`: sent with every request unless the request sets them.
    public var httpAdditionalHeaders: [String: String] = ["User-Agent": "NetExtHTTP/1"]
    /// The proxy every connection goes through (`connectionProxyDictionary`), nil for none.
    /// ATS applies to the origin, not the proxy.
    public var proxy: ConnectionProxy?
    /// The proxy's user name and password (`kCFProxyUsernameKey`/`kCFProxyPasswordKey`): Basic
    /// credentials for an HTTP proxy (RFC 7617), RFC 1929 for SOCKS5; nil for none.
    public var proxyCredential: URLCredential?
    /// The interface every connection leaves by, whatever the routing table says (Linux
    /// addition, after Network.framework's `NWParameters.requiredInterface`: a hotspot helper
    /// reaching its portal past a full VPN); nil follows the routing table. Names are still
    /// looked up by the system's resolver.
    public var requiredInterface: String?
    /// Addresses to use instead of looking names up (curl's `--resolve`), lower-case name → IP.
    public var hostAddresses: [String: String] = [:]
    /// Where cookies are kept and read from (`httpCookieStorage`): this process's shared
    /// storage by default, a storage of its own for ephemeral sessions, a group's
    /// (``HTTPCookieStorage/sharedCookieStorage(forGroupContainerIdentifier:)``) to share them
    /// between processes; nil for no cookies.
    public var httpCookieStorage: HTTPCookieStorage? = .shared
    /// Where credentials for servers' Digest and Basic challenges are kept and read from
    /// (`urlCredentialStorage`): this process's shared storage by default, one of its own for
    /// ephemeral sessions; nil for none kept.
    public var urlCredentialStorage: URLCredentialStorage? = .shared
    /// Asked about every load before it connects; ``SystemURLFilter`` (netextd's URL filter)
    /// unless replaced, nil for none.
    public var urlFilter: (any URLLoadFilter)? = SystemURLFilter()
    /// Called with a line for each ATS decision and refusal (Apple's `CFNETWORK_DIAGNOSTICS`
    /// for ATS); nil for none.
    public var diagnosticLog: (@Sendable (String) -> Void)?

    public init() {}

    /// The defaults.
    public static var `default`: URLSessionConfiguration { URLSessionConfiguration() }
    /// Nothing is kept beyond the session: its cookies in a storage of its own.
    public static var ephemeral: URLSessionConfiguration {
        var configuration = URLSessionConfiguration()
        configuration.httpCookieStorage = HTTPCookieStorage()
        configuration.urlCredentialStorage = URLCredentialStorage()
        return configuration
    }

    /// A background session's configuration: its download and upload tasks are carried out by
    /// the user's transfer service (`netext-transferd`), go on after the app exits, are
    /// resumed after a network change or a restart, and report to whichever process next makes
    /// a session with the same identifier (docs/background-transfers.md).
    public static func background(withIdentifier identifier: String) -> URLSessionConfiguration {
        var configuration = URLSessionConfiguration()
        configuration.identifier = identifier
        return configuration
    }
}
