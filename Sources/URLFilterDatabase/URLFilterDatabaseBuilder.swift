import BloomFilter
import Foundation
import URLFilter
import NetExtCore
import HomomorphicEncryption
import PIRService
import PrivateInformationRetrieval
import NetExtLinux

/// Turns a URL list into what the URL filter serves: the Bloom prefilter (bit-compatible with
/// NEURLFilterPrefilter) and the processed, sharded keyword-PIR database (key = normalized URL,
/// value = 1), written under one directory.
public struct URLFilterDatabaseBuilder: Sendable {
    public var falsePositiveRate: Double
    public var murmurSeed: UInt32
    public var useCase: String
    public var entriesPerShard: Int
    public var parameters: EncryptionParameters

    public init(falsePositiveRate: Double, murmurSeed: UInt32 = 0, useCase: String, entriesPerShard: Int = 50_000,
                parameters: EncryptionParameters = .n4096LogQ27_28_28LogT5) {
        self.falsePositiveRate = falsePositiveRate
        self.murmurSeed = murmurSeed
        self.useCase = useCase
        self.entriesPerShard = entriesPerShard
        self.parameters = parameters
    }

    /// What a build produced.
    public struct Summary: Sendable, Codable {
        public var lines: Int
        public var urls: Int
        public var duplicates: Int
        public var bitCount: Int
        public var hashCount: Int
        public var murmurSeed: UInt32
        public var prefilterBytes: Int
        public var targetFalsePositiveRate: Double
        public var measuredFalsePositiveRate: Double
        public var shards: Int
        public var buckets: Int
        public var databaseBytes: Int
        public var seconds: Double
    }

    /// Normalized record keys of a list (one URL per line; blank lines and `#` comments
    /// skipped); a bad line stops the build with its number.
    public static func readKeys(list text: String) throws(URLFilterError) -> (keys: [String], lines: Int, duplicates: Int) {
        var keys: [String] = []
        var seen = Set<String>()
        var duplicates = 0
        var lineNumber = 0
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }  // the newline ending the last line
        for line in lines {
            lineNumber += 1
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let key: URLFilterKey
            do throws(URLFilterError) { key = try URLFilterKey(parsing: trimmed) } catch {
                if case let .invalidURL(_, reason) = error { throw .invalidListLine(line: lineNumber, reason: reason) }
                throw error
            }
            if seen.insert(key.description).inserted { keys.append(key.description) } else { duplicates += 1 }
        }
        return (keys, lineNumber, duplicates)
    }

    /// Builds everything into `output`; `progress` receives human-readable steps.
    public func build(list text: String, output: String, progress: (String) -> Void = { _ in }) throws(URLFilterError) -> Summary {
        let start = Date()
        let (keys, lines, duplicates) = try Self.readKeys(list: text)
        guard !keys.isEmpty else { throw .invalidListLine(line: lines, reason: "the list has no URL") }
        progress("read \(keys.count) URLs from \(lines) lines (\(duplicates) duplicates)")
        var filter: BloomFilter
        do { filter = try BloomFilter(capacity: keys.count, falsePositiveRate: falsePositiveRate, murmurSeed: murmurSeed) } catch {
            throw .invalidListLine(line: 0, reason: "Bloom filter: \(error)")
        }
        for key in keys { filter.insert(key) }
        // Measured false positives over keys that cannot be in the list.
        let trials = 200_000
        var hits = 0
        for i in 0..<trials where filter.contains("netext-fpr-probe-\(i).invalid/") { hits += 1 }
        do { try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true) } catch {
            throw .io(path: output, reason: error.localizedDescription)
        }
        try writeAtomically(Data(filter.data), to: "\(output)/prefilter.bin")
        let prefilterJSON = """
            {"bitCount": \(filter.bitCount), "hashCount": \(filter.hashCount), "murmurSeed": \(murmurSeed), "itemCount": \(keys.count)}

            """
        try writeAtomically(Data(prefilterJSON.utf8), to: "\(output)/prefilter.json")
        progress("prefilter: \(filter.bitCount) bits, \(filter.hashCount) hashes, \(filter.data.count) bytes")

        let shardCount = max(1, (keys.count + entriesPerShard - 1) / entriesPerShard)
        let context: BFVContext
        let keywordParameters: KeywordPirParameters
        let database: KeywordDatabase<BFVContext>
        do {
            context = try BFVContext(parameters: parameters)
            keywordParameters = try KeywordPirParameters(hashFunctionCount: 2, bucketCapacity: 8, valueSize: 1, shardCount: shardCount)
            database = try KeywordDatabase(
                rows: keys.map { KeywordValuePair(keyword: $0, value: [1]) }, parameters: keywordParameters, scheme: context,
                progress: { done, total in progress("PIR shards encoded: \(done)/\(total)") })
        } catch {
            throw .io(path: output, reason: "PIR database: \(error)")
        }
        do throws(PIRServiceError) {
            try PIRDatabaseDirectory.write(database, context: context, useCase: useCase, root: output)
        } catch { throw .io(path: output, reason: error.description) }
        let directory = PIRDatabaseDirectory.useCaseDirectory(root: output, useCase: useCase)
        let databaseBytes = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).reduce(0) { sum, name in
            sum + (((try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)"))?[.size] as? Int) ?? 0)
        }
        return Summary(
            lines: lines, urls: keys.count, duplicates: duplicates, bitCount: filter.bitCount, hashCount: filter.hashCount,
            murmurSeed: murmurSeed, prefilterBytes: filter.data.count, targetFalsePositiveRate: falsePositiveRate,
            measuredFalsePositiveRate: Double(hits) / Double(trials), shards: shardCount,
            buckets: database.configurations.reduce(0) { $0 + $1.bucketCount } * database.parameters.hashFunctionCount,
            databaseBytes: databaseBytes,
            seconds: Date().timeIntervalSince(start))
    }

    func writeAtomically(_ data: Data, to path: String) throws(URLFilterError) {
        do throws(AtomicFile.Failure) { try AtomicFile.write([UInt8](data), to: path) } catch {
            throw .io(path: path, reason: error.reason)
        }
    }
}
