import BloomFilter
import Foundation

/// The verdict path for one URL filter (seed 004's design): normalize the URL into its keys;
/// when the Bloom prefilter rules every key out, allow at once; otherwise ask the PIR service
/// privately for the keys the prefilter could not rule out; cache the answer (bounded size and
/// age); when no answer is possible, deny if `failClosed`, else allow — and say `.unknown`.
public actor URLFilterLookup {
    /// How a verdict was reached.
    public enum Source: String, Sendable, Codable {
        case prefilter, cache, pir, failure
    }

    /// A verdict with what decided it; `effective` applies the failure policy to `.unknown`.
    public struct Decision: Sendable, Equatable, Codable {
        public var verdict: URLFilterVerdict
        public var effective: URLFilterVerdict
        public var source: Source
        /// Why no decision was possible, for `.unknown`.
        public var reason: String?
    }

    public private(set) var prefilter: BloomFilter?
    let client: PIRHTTPClient
    public let failClosed: Bool
    let cache: VerdictCache

    public init(prefilter: BloomFilter?, client: PIRHTTPClient, failClosed: Bool, cacheCapacity: Int = 10_000, cacheLifetime: Double = 3600) {
        self.prefilter = prefilter
        self.client = client
        self.failClosed = failClosed
        cache = VerdictCache(capacity: cacheCapacity, lifetime: cacheLifetime)
    }

    /// Swaps in a new prefilter (fetched by the control provider) and forgets cached verdicts.
    public func replacePrefilter(_ new: BloomFilter?) {
        prefilter = new
        cache.removeAll()
    }

    /// The decision for `url`. Never throws: a URL that cannot be parsed is `.unknown`.
    public func decision(for url: String) async -> Decision {
        // The common URL is checked straight from its bytes; others after parsing.
        let checkedFromText = prefilter.flatMap { URLFilterKey.mayBeListed(url: url, in: $0) }
        if checkedFromText == false { return Decision(verdict: .allow, effective: .allow, source: .prefilter) }
        let key: URLFilterKey
        do throws(URLFilterError) { key = try URLFilterKey(parsing: url) } catch { return unknown("\(error)") }
        if checkedFromText == nil, let prefilter, !key.mayBeListed(in: prefilter) {
            return Decision(verdict: .allow, effective: .allow, source: .prefilter)
        }
        let normalized = key.description
        if let cached = cache.verdict(for: normalized) { return Decision(verdict: cached, effective: cached, source: .cache) }
        do throws(URLFilterError) {
            let verdict = try await client.check([url], prefilter: prefilter).first ?? .unknown
            if verdict != .unknown { cache.store(verdict, for: normalized) }
            return verdict == .unknown ? unknown("no answer") : Decision(verdict: verdict, effective: verdict, source: .pir)
        } catch { return unknown("\(error)") }
    }

    /// The verdict as the participation API gives it: `.allow`, `.deny`, or `.unknown`.
    public func verdict(for url: String) async -> URLFilterVerdict { await decision(for: url).verdict }

    private func unknown(_ reason: String) -> Decision {
        Decision(verdict: .unknown, effective: failClosed ? .deny : .allow, source: .failure, reason: reason)
    }

    /// Cached verdicts held now.
    public var cachedCount: Int { cache.count }
}
