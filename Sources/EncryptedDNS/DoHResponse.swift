import NIOCore
import NIOHPACK

/// One DoH exchange (RFC 8484 §4.1): the POST of a DNS message — or a GET, an Oblivious DoH
/// message, a GET of a target's configurations — and what must come back (§4.2.1).
struct DoHRequest {
    var method: String
    var authority: String
    /// The path with its query, if any.
    var path: String
    /// Empty for a GET.
    var body: [UInt8]
    /// The media type of the body and of the answer (`application/dns-message` for DoH).
    var mediaType: String
    var server: String

    static let dnsMessage = "application/dns-message"

    /// The request's header block (RFC 9113 §8.3.1 pseudo-headers first).
    var headers: HPACKHeaders {
        var headers: HPACKHeaders = [":method": method, ":scheme": "https", ":authority": authority, ":path": path, "accept": mediaType]
        if !body.isEmpty {
            headers.add(name: "content-type", value: mediaType)
            headers.add(name: "content-length", value: "\(body.count)")
        }
        return headers
    }
}

/// The answer to a ``DoHRequest`` as its frames arrive, pure: the final status must be a 2xx, the
/// media type the request's, the body at most 65,535 bytes and not empty. Each step returns the
/// exchange's outcome once it has one.
struct DoHResponse {
    let request: DoHRequest
    private var status: Int?
    private var body: [UInt8] = []

    init(request: DoHRequest) { self.request = request }

    mutating func headers(_ headers: HPACKHeaders, endStream: Bool) -> Result<[UInt8], EncryptedDNSError>? {
        if status == nil {
            guard let code = headers.first(name: ":status").flatMap(Int.init) else {
                return .failure(.httpFailure(server: request.server, reason: "the response has no status"))
            }
            // 1xx are interim answers; the final one follows.
            if (100..<200).contains(code) { return nil }
            guard (200..<300).contains(code) else { return .failure(.httpStatus(server: request.server, status: code)) }
            let type = headers.first(name: "content-type")?.lowercased() ?? ""
            guard type.split(separator: ";").first.map({ $0.trimmingCharacters(in: .whitespaces) }) == request.mediaType else {
                return .failure(.httpFailure(server: request.server, reason: "content type '\(type)', not \(request.mediaType)"))
            }
            status = code
        }
        return endStream ? complete() : nil
    }

    mutating func data(_ bytes: ByteBuffer, endStream: Bool) -> Result<[UInt8], EncryptedDNSError>? {
        guard status != nil else { return .failure(.httpFailure(server: request.server, reason: "data before the response's headers")) }
        guard body.count + bytes.readableBytes <= DNSOverHTTPSUpstream.maximumAnswerBytes else {
            return .failure(.httpFailure(server: request.server, reason: "the answer is longer than 65535 bytes"))
        }
        body += bytes.readableBytesView
        return endStream ? complete() : nil
    }

    private func complete() -> Result<[UInt8], EncryptedDNSError> {
        body.isEmpty ? .failure(.httpFailure(server: request.server, reason: "the response has no body")) : .success(body)
    }
}
