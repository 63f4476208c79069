import Foundation
import HTTPFetching
import NetExt
import Synchronization

/// The reference URL filter control provider: downloads the prefilter that
/// `netext-urlfilter-db build` wrote (`prefilter.json` with bitCount, hashCount and murmurSeed,
/// and `prefilter.bin`) from a base URL given in its manifest (`--from URL`), over HTTP or
/// HTTPS (HTTP/2 when the server offers it), trusting the system's CA bundle or only the
/// certificates of `--ca-file PEM`. A prefilter whose `prefilter.bin` has not changed since the
/// last fetch (HTTP 304 to If-Modified-Since) is reported as nil, so netextd keeps the one it
/// has. Bits over 2 MiB travel as a file in a private directory rather than inline in the
/// message.
public final class PrefilterDownloadProvider: URLFilterControlProvider {
    public let baseURL: URL
    private let upstream: HTTPUpstream
    private let lastModified = Mutex<String?>(nil)
    static let inlineLimit = 2 << 20

    /// `tls`: whom an https server must prove itself to (default: the system's CA bundle).
    public init(baseURL: URL, tls: ClientTLS? = nil) {
        self.baseURL = baseURL
        upstream = HTTPUpstream(timeout: 30, tls: tls)
    }

    /// Reads `--from URL` and the optional `--ca-file PEM` from the arguments.
    public convenience init(arguments: [String]) throws(NetExtError) {
        func value(of option: String) -> String? {
            guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        guard let text = value(of: "--from"), let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil
        else { throw .invalid("the prefilter provider needs --from http(s)://HOST/PATH (where prefilter.json and prefilter.bin are served)") }
        var tls: ClientTLS?
        if let caFile = value(of: "--ca-file") {
            do throws(TLSSetupError) { tls = try ClientTLS(caFile: caFile) } catch { throw .invalid("--ca-file: \(error.description)") }
        }
        self.init(baseURL: url, tls: tls)
    }

    struct Parameters: Decodable {
        var bitCount: Int
        var hashCount: Int
        var murmurSeed: UInt32
    }

    public func fetchPrefilter() async throws -> URLFilterPrefilter? {
        var headers: [(name: String, value: String)] = []
        if let since = lastModified.withLock({ $0 }) { headers.append(("If-Modified-Since", since)) }
        let binURL = baseURL.appendingPathComponent("prefilter.bin")
        let bin = try await get(binURL, headers: headers)
        if bin.status == 304 { return nil }
        guard bin.status == 200 else { throw NetExtError(.providerFailed, "\(binURL.absoluteString): \(bin.statusText)") }
        let jsonURL = baseURL.appendingPathComponent("prefilter.json")
        let json = try await get(jsonURL, headers: [])
        guard json.status == 200 else { throw NetExtError(.providerFailed, "\(jsonURL.absoluteString): \(json.statusText)") }
        let parameters: Parameters
        let document = Data(json.body)
        do { parameters = try JSONDecoder().decode(Parameters.self, from: document) } catch {
            throw NetExtError.invalid("prefilter.json: \(JSONDecodingText.describe(error, data: document))")
        }
        lastModified.withLock { $0 = bin.header("Last-Modified") }
        let bits = Data(bin.body)
        if bits.count <= Self.inlineLimit {
            return URLFilterPrefilter(data: bits, bitCount: parameters.bitCount, hashCount: parameters.hashCount, murmurSeed: parameters.murmurSeed)
        }
        let directory = NSTemporaryDirectory() + "netext-prefilter-\(getpid())"
        mkdir(directory, 0o755)
        let path = directory + "/prefilter-\(UUID().uuidString).bin"
        guard FileManager.default.createFile(atPath: path, contents: bits, attributes: [.posixPermissions: 0o644]) else {
            throw NetExtError(.providerFailed, "cannot write \(path)")
        }
        return URLFilterPrefilter(path: path, bitCount: parameters.bitCount, hashCount: parameters.hashCount, murmurSeed: parameters.murmurSeed)
    }

    private func get(_ url: URL, headers: [(name: String, value: String)]) async throws(NetExtError) -> HTTPServerResponse {
        do throws(HTTPUpstream.Failure) {
            return try await upstream.exchange(method: "GET", url: url, headers: headers, body: [])
        } catch {
            throw NetExtError(.providerFailed, "\(url.absoluteString): \(error.description)")
        }
    }
}
