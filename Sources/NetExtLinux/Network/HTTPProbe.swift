import Foundation
import NetExtCore

/// The on-demand probe: an HTTP/1.1 GET (RFC 9112) whose answer matches only if its status is
/// 200 — a redirect (a captive portal) does not. Plain `http` only; an `https` probe URL never
/// matches (logged), since netextd carries no TLS stack. The fetch and the parse are the
/// connectivity check's (`HTTPConnectivityCheck`, `ProbeResponse`), unbound to an interface.
public enum HTTPProbe {
    public static func succeeds(_ url: URL, timeoutMilliseconds: Int = 2000) -> Bool {
        guard url.scheme == "http", url.host != nil else { return false }
        guard let bytes = try? HTTPConnectivityCheck.fetch(url, interface: nil, timeoutMilliseconds: timeoutMilliseconds) else { return false }
        return (try? ProbeResponse.parse(bytes))?.status == 200
    }
}
