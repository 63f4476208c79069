import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NetExt
import Synchronization

/// The reference URL filter control provider: downloads the prefilter that
/// `netext-urlfilter-db build` wrote (`prefilter.json` with bitCount, hashCount and murmurSeed,
/// and `prefilter.bin`) from a base URL given in its manifest (`--from URL`). A prefilter whose
/// `prefilter.bin` has not changed since the last fetch (HTTP 304 to If-Modified-Since) is
/// reported as nil, so netextd keeps the one it has. Bits over 2 MiB travel as a file in a
/// private directory rather than inline in the message.
public final class PrefilterDownloadProvider: URLFilterControlProvider {
    public let baseURL: URL
    private let session: URLSession
    private let lastModified = Mutex<String?>(nil)
    static let inlineLimit = 2 << 20

    public init(baseURL: URL) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    /// Reads `--from URL` from the arguments.
    public convenience init(arguments: [String]) throws(NetExtError) {
        guard let index = arguments.firstIndex(of: "--from"), index + 1 < arguments.count,
              let url = URL(string: arguments[index + 1]), ["http", "https"].contains(url.scheme ?? "")
        else { throw .invalid("the prefilter provider needs --from http(s)://HOST/PATH (where prefilter.json and prefilter.bin are served)") }
        self.init(baseURL: url)
    }

    struct Parameters: Decodable {
        var bitCount: Int
        var hashCount: Int
        var murmurSeed: UInt32
    }

    public func fetchPrefilter() async throws -> URLFilterPrefilter? {
        var binRequest = URLRequest(url: baseURL.appendingPathComponent("prefilter.bin"))
        if let since = lastModified.withLock({ $0 }) { binRequest.setValue(since, forHTTPHeaderField: "If-Modified-Since") }
        let (bits, binResponse) = try await session.data(for: binRequest)
        let status = (binResponse as? HTTPURLResponse)?.statusCode ?? 0
        if status == 304 { return nil }
        guard status == 200 else { throw NetExtError(.providerFailed, "prefilter.bin: HTTP \(status)") }
        let (json, jsonResponse) = try await session.data(from: baseURL.appendingPathComponent("prefilter.json"))
        guard (jsonResponse as? HTTPURLResponse)?.statusCode == 200 else { throw NetExtError(.providerFailed, "prefilter.json: not found") }
        let parameters: Parameters
        do { parameters = try JSONDecoder().decode(Parameters.self, from: json) } catch {
            throw NetExtError.invalid("prefilter.json: \(error)")
        }
        let modified = (binResponse as? HTTPURLResponse)?.value(forHTTPHeaderField: "Last-Modified")
        lastModified.withLock { $0 = modified }
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
}
