import Foundation
import NIOSSL

/// What a background session's configuration says about how its transfers load, in the form
/// the transfer service keeps with each task: the app's ATS policy, whom it trusts, timeouts,
/// proxy, interface, cookies and the app it loads for. Everything else of a
/// ``URLSessionConfiguration`` (diagnostic logging, a URL filter stand-in) stays in the app.
package struct BackgroundTransferSettings: Sendable, Codable, Equatable {
    package var appIdentifier: String
    package var appTransportSecurity: ATSPolicy
    /// The trusted CA certificates in DER, nil for the machine's bundle.
    package var trustedCertificates: [Data]?
    package var timeoutIntervalForRequest: Double
    package var timeoutIntervalForResource: Double
    package var timeoutIntervalForConnect: Double
    package var allowsHTTP2: Bool
    package var httpAdditionalHeaders: [String: String]
    package var proxy: ConnectionProxy?
    /// Kept with the task in the user's own store (mode 0600), as the app gave it.
    package var proxyCredential: URLCredential?
    package var requiredInterface: String?
    package var hostAddresses: [String: String]
    /// The app group whose cookies the loads use; nil for none.
    package var cookieGroup: String?
    /// Whether netextd's URL filter is asked (it is unless the app replaced or removed it).
    package var usesSystemURLFilter: Bool

    package init(_ configuration: URLSessionConfiguration, appIdentifier: String) throws(HTTPLoadError) {
        self.appIdentifier = appIdentifier
        appTransportSecurity = configuration.appTransportSecurity
        switch configuration.trust {
        case .system: trustedCertificates = nil
        case .certificates(let roots):
            do { trustedCertificates = try roots.map { Data(try $0.toDERBytes()) } } catch {
                throw .invalidConfiguration("a trusted certificate cannot be written as DER for the transfer service: \(TLSErrorText.describe(error))")
            }
        }
        timeoutIntervalForRequest = configuration.timeoutIntervalForRequest
        timeoutIntervalForResource = configuration.timeoutIntervalForResource
        timeoutIntervalForConnect = configuration.timeoutIntervalForConnect
        allowsHTTP2 = configuration.allowsHTTP2
        httpAdditionalHeaders = configuration.httpAdditionalHeaders
        proxy = configuration.proxy
        proxyCredential = configuration.proxyCredential
        requiredInterface = configuration.requiredInterface
        hostAddresses = configuration.hostAddresses
        cookieGroup = configuration.httpCookieStorage?.groupContainerIdentifier
        usesSystemURLFilter = configuration.urlFilter is SystemURLFilter
    }

    /// The configuration the transfer service loads with.
    package func configuration() throws(HTTPLoadError) -> URLSessionConfiguration {
        var configuration = URLSessionConfiguration()
        configuration.appTransportSecurity = appTransportSecurity
        if let trustedCertificates {
            do {
                configuration.trust = .certificates(try trustedCertificates.map { try NIOSSLCertificate(bytes: Array($0), format: .der) })
            } catch {
                throw .invalidConfiguration("a trusted certificate of the task cannot be read: \(TLSErrorText.describe(error))")
            }
        }
        configuration.timeoutIntervalForRequest = timeoutIntervalForRequest
        configuration.timeoutIntervalForResource = timeoutIntervalForResource
        configuration.timeoutIntervalForConnect = timeoutIntervalForConnect
        configuration.allowsHTTP2 = allowsHTTP2
        configuration.httpAdditionalHeaders = httpAdditionalHeaders
        configuration.proxy = proxy
        configuration.proxyCredential = proxyCredential
        configuration.requiredInterface = requiredInterface
        configuration.hostAddresses = hostAddresses
        configuration.httpCookieStorage = try cookieGroup.map { group throws(HTTPLoadError) in
            try HTTPCookieStorage.sharedCookieStorage(forGroupContainerIdentifier: group)
        }
        configuration.urlFilter = usesSystemURLFilter ? SystemURLFilter(appIdentifier: appIdentifier) : nil
        return configuration
    }
}
