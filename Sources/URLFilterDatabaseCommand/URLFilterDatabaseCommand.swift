import ArgumentParser
import BloomFilter
import Foundation
import NetExtCore
import Synchronization
import URLFilter
import URLFilterDatabase

/// `netext-urlfilter-db`: builds the URL filter's prefilter and PIR database from a URL list,
/// and asks a running PIR server about URLs.
public struct URLFilterDatabaseCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "netext-urlfilter-db",
        abstract: "Build and query the URL filter's prefilter and PIR database (docs/url-filter.md).",
        version: NetExtVersion.current,
        subcommands: [BuildCommand.self, QueryCommand.self])

    public init() {}
}

struct BuildCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Turn a URL list (one per line) into DIR/prefilter.bin, DIR/prefilter.json and DIR/pir/<use case>/.")

    @Option(help: "The URL list: one URL per line, with or without scheme; '#' starts a comment.") var urls: String
    @Option(help: "Target false-positive rate of the prefilter, e.g. 0.001.") var falsePositiveRate: Double
    @Option(help: "MurmurHash3 seed of the prefilter.") var murmurSeed: UInt32 = 0
    @Option(help: "The use case, e.g. com.example.app.url.filtering.") var useCase: String
    @Option(help: "Output directory.") var output: String
    @Option(help: "URLs per PIR shard (more shards: faster answers, less privacy).") var entriesPerShard = 50_000

    func validate() throws {
        guard falsePositiveRate > 0, falsePositiveRate < 1 else {
            throw ValidationError("--false-positive-rate must be between 0 and 1 (exclusive), got \(falsePositiveRate)")
        }
        guard entriesPerShard >= 1000 else { throw ValidationError("--entries-per-shard must be at least 1000") }
    }

    func run() async throws {
        guard let data = FileManager.default.contents(atPath: urls) else {
            FileHandle.standardError.write(Data("netext-urlfilter-db: cannot read \(urls)\n".utf8))
            throw ExitCode(2)
        }
        let builder = URLFilterDatabaseBuilder(
            falsePositiveRate: falsePositiveRate, murmurSeed: murmurSeed, useCase: useCase, entriesPerShard: entriesPerShard)
        let interactive = isatty(STDERR_FILENO) == 1
        do throws(URLFilterError) {
            let summary = try builder.build(list: String(decoding: data, as: UTF8.self), output: output) { step in
                let text = interactive ? "\r\u{1B}[K" + step : step + "\n"
                FileHandle.standardError.write(Data(text.utf8))
            }
            if interactive { FileHandle.standardError.write(Data("\n".utf8)) }
            print("urls=\(summary.urls) lines=\(summary.lines) duplicates=\(summary.duplicates)")
            print("prefilter: bitCount=\(summary.bitCount) hashCount=\(summary.hashCount) murmurSeed=\(summary.murmurSeed) bytes=\(summary.prefilterBytes)")
            print(String(format: "false_positive_rate: target=%g measured=%g", summary.targetFalsePositiveRate, summary.measuredFalsePositiveRate))
            print("pir: use_case=\(useCase) shards=\(summary.shards) buckets=\(summary.buckets) bytes=\(summary.databaseBytes)")
            print(String(format: "built in %.1f s into %@", summary.seconds, output))
        } catch {
            FileHandle.standardError.write(Data("netext-urlfilter-db: \(urls): \(error)\n".utf8))
            throw ExitCode(3)
        }
    }
}

struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Ask a running PIR server about URLs, privately; prints 'URL allow|deny' per URL.",
        discussion: "Each URL is checked against every key the system checks (docs/url-filter.md); with --prefilter only keys the prefilter cannot rule out are sent.")

    @Option(help: "The PIR server, e.g. http://127.0.0.1:8080.") var server: String
    @Option(help: "The use case.") var useCase: String
    @Option(help: "A build directory whose prefilter.bin/json to apply first.") var prefilter: String?
    @Option(help: "Write every request body sent, in order, to DIR/NN-PATH.bin, and the pseudonymous user identifier to DIR/user-identifier (what the server sees, for audits and load tests).") var recordRequests: String?
    @Argument(help: "URLs to check.") var urls: [String]

    func run() async throws {
        guard let serverURL = URL(string: server), serverURL.scheme == "http" || serverURL.scheme == "https" else {
            throw ValidationError("--server must be an http(s) URL, got \(server)")
        }
        var filter: BloomFilter?
        if let prefilter {
            filter = try loadPrefilter(directory: prefilter)
        }
        var observer: (@Sendable (String, [UInt8]) -> Void)?
        let userIdentifier = UUID().uuidString
        if let recordRequests {
            do {
                try FileManager.default.createDirectory(atPath: recordRequests, withIntermediateDirectories: true)
                try Data(userIdentifier.utf8).write(to: URL(fileURLWithPath: recordRequests + "/user-identifier"))
            } catch { throw ValidationError("--record-requests: cannot write to \(recordRequests): \(error.localizedDescription)") }
            let sequence = Mutex(0)
            observer = { path, body in
                let number = sequence.withLock { value in
                    value += 1
                    return value
                }
                let name = String(format: "%02d-%@.bin", number, String(path.dropFirst()))
                if !FileManager.default.createFile(atPath: recordRequests + "/" + name, contents: Data(body)) {
                    FileHandle.standardError.write(Data("netext-urlfilter-db: cannot write the recorded request \(recordRequests)/\(name)\n".utf8))
                }
            }
        }
        let client = PIRHTTPClient(server: serverURL, useCase: useCase, userIdentifier: userIdentifier, observer: observer)
        do throws(URLFilterError) {
            let verdicts = try await client.check(urls, prefilter: filter)
            for (url, verdict) in zip(urls, verdicts) { print("\(url) \(verdict.rawValue)") }
        } catch {
            FileHandle.standardError.write(Data("netext-urlfilter-db: \(error)\n".utf8))
            throw ExitCode(3)
        }
    }

    func loadPrefilter(directory: String) throws -> BloomFilter {
        struct Description: Decodable { let bitCount: Int; let hashCount: Int; let murmurSeed: UInt32 }
        guard let bytes = FileManager.default.contents(atPath: "\(directory)/prefilter.bin"),
              let json = FileManager.default.contents(atPath: "\(directory)/prefilter.json")
        else { throw ValidationError("\(directory) has no prefilter.bin and prefilter.json") }
        let description: Description
        do { description = try JSONDecoder().decode(Description.self, from: json) } catch {
            throw ValidationError("\(directory)/prefilter.json: \(JSONDecodingText.describe(error, data: json))")
        }
        return try BloomFilter(data: [UInt8](bytes), bitCount: description.bitCount, hashCount: description.hashCount, murmurSeed: description.murmurSeed)
    }
}
