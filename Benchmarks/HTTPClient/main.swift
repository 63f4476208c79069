// NetExtHTTP against AsyncHTTPClient, the same nginx, the same run (scripts/bench-http):
//   sequential  — a new session: the connection opened, then N small GETs one after another on it
//   concurrent  — a warm session: N small GETs at once (HTTP/2 streams on its one connection)
//   throughput  — a warm session: one GET of a large file, MB/s
// Each figure is the median of ROUNDS rounds. Usage:
//   netext-bench-http --cacert CA --small URL --large URL [--requests N] [--rounds R] [--http1]
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NetExtHTTP

struct Options: Sendable {
    var caFile = ""
    var small = ""
    var large = ""
    var requests = 100
    var rounds = 15
    var http1 = false
    var onLoop = false
    /// `--only-on-loop`: the on-loop session alone (to profile it).
    var onlyOnLoop = false
    /// `--sequential-only`: the sequential loads alone (to profile them).
    var sequentialOnly = false

    init(_ arguments: [String]) {
        var index = 0
        func value() -> String {
            index += 1
            guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--cacert": caFile = value()
            case "--small": small = value()
            case "--large": large = value()
            case "--requests": requests = Int(value()) ?? 0
            case "--rounds": rounds = Int(value()) ?? 0
            case "--http1": http1 = true
            case "--on-loop": onLoop = true
            case "--only-on-loop": onLoop = true; onlyOnLoop = true
            case "--sequential-only": sequentialOnly = true
            default: fail("unknown argument \(arguments[index])")
            }
            index += 1
        }
        guard !caFile.isEmpty, !small.isEmpty, !large.isEmpty, (1...10_000).contains(requests), (1...1000).contains(rounds) else {
            fail("usage: netext-bench-http --cacert CA --small URL --large URL [--requests 1-10000] [--rounds 1-1000] [--http1]")
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("netext-bench-http: \(message)\n".utf8))
    exit(1)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// One client under test: open a session, load, close.
protocol Client: Sendable {
    func open() async throws
    func load(_ url: String) async throws -> Int
    func close() async throws
}

final class NetExtClient: Client, @unchecked Sendable {
    let configuration: NetExtHTTP.URLSessionConfiguration
    var session: NetExtHTTP.URLSession?
    init(caFile: String, http1: Bool, loop: (any EventLoop)? = nil) throws {
        self.loop = loop
        var configuration = NetExtHTTP.URLSessionConfiguration.default
        configuration.trust = try HTTPTrust.pemFile(caFile)
        configuration.allowsHTTP2 = !http1
        self.configuration = configuration
    }
    /// With `--on-loop`: the session's one event loop, whose executor the measuring task prefers.
    let loop: (any EventLoop)?
    func open() async throws { session = NetExtHTTP.URLSession(configuration: configuration, eventLoopGroup: loop ?? MultiThreadedEventLoopGroup.singleton) }
    func load(_ url: String) async throws -> Int {
        let (data, response) = try await session!.data(from: URL(string: url)!)
        guard response.statusCode == 200 else { fail("NetExtHTTP got \(response.statusCode) for \(url)") }
        return data.count
    }
    func close() async throws { await session?.invalidateAndCancel() }
}

final class AHCClient: Client, @unchecked Sendable {
    let configuration: HTTPClient.Configuration
    var client: HTTPClient?
    init(caFile: String, http1: Bool) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        tls.minimumTLSVersion = .tlsv12
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = http1 ? .http1Only : .automatic
        self.configuration = configuration
    }
    func open() async throws { client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration) }
    func load(_ url: String) async throws -> Int {
        let response = try await client!.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        guard response.status == .ok else { fail("AsyncHTTPClient got \(response.status) for \(url)") }
        return try await response.body.collect(upTo: 1 << 30).readableBytes
    }
    func close() async throws { try await client?.shutdown() }
}

/// Medians: sequential requests/s (connection opening included), concurrent requests/s, MB/s.
func measure(_ client: any Client, _ options: Options) async throws -> (Double, Double, Double) {
    let clock = ContinuousClock()
    var sequential: [Double] = [], concurrent: [Double] = [], throughput: [Double] = []
    for _ in 0..<options.rounds {
        try await client.open()
        let started = clock.now
        for _ in 0..<options.requests { _ = try await client.load(options.small) }
        sequential.append(Double(options.requests) / seconds(clock.now - started))
        if options.sequentialOnly {
            try await client.close()
            continue
        }

        let burst = clock.now
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<options.requests { group.addTask { try await client.load(options.small) } }
            for try await _ in group {}
        }
        concurrent.append(Double(options.requests) / seconds(clock.now - burst))

        let download = clock.now
        let bytes = try await client.load(options.large)
        throughput.append(Double(bytes) / 1e6 / seconds(clock.now - download))
        try await client.close()
    }
    if options.sequentialOnly { return (median(sequential), 0, 0) }
    return (median(sequential), median(concurrent), median(throughput))
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
if !options.onlyOnLoop {
    let netext = try NetExtClient(caFile: options.caFile, http1: options.http1)
    let ahc = try AHCClient(caFile: options.caFile, http1: options.http1)
    // A warm-up round each, then alternate so that neither has the machine's better moments.
    _ = try await measure(netext, Options(["--cacert", options.caFile, "--small", options.small, "--large", options.large, "--rounds", "1"] + (options.http1 ? ["--http1"] : [])))
    _ = try await measure(ahc, Options(["--cacert", options.caFile, "--small", options.small, "--large", options.large, "--rounds", "1"] + (options.http1 ? ["--http1"] : [])))
    let n = try await measure(netext, options)
    let a = try await measure(ahc, options)
    print(String(format: "netexthttp sequential_rps=%.0f concurrent_rps=%.0f throughput_mbps=%.1f", n.0, n.1, n.2))
    print(String(format: "asynchttpclient sequential_rps=%.0f concurrent_rps=%.0f throughput_mbps=%.1f", a.0, a.1, a.2))
}
if options.onLoop {
    // The same session on one event loop, the measuring task preferring that loop's executor.
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let onLoop = try NetExtClient(caFile: options.caFile, http1: options.http1, loop: loop)
    let o = try await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) { try await measure(onLoop, options) }
    print(String(format: "netexthttp_onloop sequential_rps=%.0f concurrent_rps=%.0f throughput_mbps=%.1f", o.0, o.1, o.2))
}
