import Foundation
import PrivacyPass

/// The URL filter's issuer requests go the way its other service requests go (directly, or
/// through the Oblivious HTTP relay): a ``ServiceTransport`` as the ``PrivacyPassClient``'s.
struct IssuerServiceTransport: PrivacyPassIssuerTransport {
    let inner: any ServiceTransport

    func exchange(method: String, url: URL, headers: [(name: String, value: String)], body: [UInt8]) async throws(PrivacyPassClient.Failure) -> PrivacyPassIssuerAnswer {
        do throws(URLFilterError) {
            let answer = try await inner.send(ServiceRequest(method: method, url: url, headers: headers, body: body))
            return PrivacyPassIssuerAnswer(status: answer.status, body: answer.body)
        } catch {
            switch error {
            case let .server(status, message): throw .server(status: status, message: message)
            case let .transport(reason): throw .transport(reason)
            default: throw .protocolMismatch(error.description)
            }
        }
    }
}

extension PrivacyPassClient {
    /// A client whose issuer requests go through `transport` (the URL filter's), its unused
    /// tokens kept in `store`.
    public init(issuerURL: URL, credential: String, transport: any ServiceTransport, store: PrivateTokenStore, batchSize: Int = 16) {
        self.init(issuerURL: issuerURL, credential: credential, transport: IssuerServiceTransport(inner: transport), store: store as any PrivateTokenCache, batchSize: batchSize)
    }
}

extension URLFilterError {
    /// The URL filter's error for a token that could not be had.
    init(_ failure: PrivacyPassClient.Failure) {
        switch failure {
        case let .server(status, message): self = .server(status: status, message: message)
        case let .transport(reason): self = .transport(reason)
        case let .protocolMismatch(reason): self = .protocolMismatch(reason)
        case let .cache(reason): self = .io(path: "token store", reason: reason)
        }
    }
}
