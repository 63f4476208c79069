// URL filter II benchmark: verdict latency for a Bloom negative (in process), end-to-end latency
// of a positive through relay → gateway → PIR server with Privacy Pass tokens (all on loopback),
// verdicts per second, issuer tokens per second beside raw blind-RSA signing, and gateway
// requests per second (plain HTTP/1.1 and HTTPS/2) beside raw HPKE open+seal — each anchor
// measured in the same run — and a PIR verdict over HTTPS/2 beside plain HTTP/1.1.
// Usage: NETEXT_BENCH_TLS_DIR=DIR netext-bench-urlfilter [SECONDS_PER_MEASUREMENT]   Prints key=value lines.
import BloomFilter
import Crypto
import Foundation
import HTTPServing
import Logging
import ObliviousHTTP
import PIRService
import PrivacyPass
import PrivacyServices
import URLFilter
import Synchronization
import URLFilterDatabase

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func percentile(_ values: [Double], _ q: Double) -> Double { values.sorted()[min(values.count - 1, Int(Double(values.count) * q))] }
// The certificates come from scripts/lib/lab-ca.sh (scripts/bench-urlfilter makes them):
// NETEXT_BENCH_TLS_DIR holds ca.crt and pir.crt/pir.key for 127.0.0.1.
guard let tlsDirectory = ProcessInfo.processInfo.environment["NETEXT_BENCH_TLS_DIR"] else {
    FileHandle.standardError.write(Data("netext-bench-urlfilter: set NETEXT_BENCH_TLS_DIR to a lab CA directory with pir.crt and pir.key for 127.0.0.1 (scripts/bench-urlfilter does)\n".utf8))
    exit(64)
}
let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 3 : 3
let quiet = Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() }
let root = NSTemporaryDirectory() + "netext-bench-urlfilter-\(UUID().uuidString)"
try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: root) }

/// Runs `body` on `workers` concurrent tasks for `seconds`; returns completed operations per second.
func rate(workers: Int, _ body: @escaping @Sendable () async throws -> Int) async throws -> Double {
    let deadline = now() + seconds
    let start = now()
    let total = try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<workers {
            group.addTask {
                var done = 0
                while now() < deadline { done += try await body() }
                return done
            }
        }
        return try await group.reduce(0, +)
    }
    return Double(total) / (now() - start)
}

// `netext-bench-urlfilter SECONDS negatives`: only the in-process Bloom-negative path, repeated
// (for profilers).
if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "negatives" {
    var filter = try BloomFilter(capacity: 20_000, falsePositiveRate: 0.001, murmurSeed: 0)
    for index in 0..<20_000 { filter.insert("blocked\(index).example/") }
    let urls = (0..<100_000).map { index in
        index % 2 == 0 ? "https://www.allowed\(index).example/" : "https://news.allowed\(index).example/section/article-\(index).html?ref=\(index)"
    }
    let keys = try urls.map { try URLFilterKey(parsing: $0) }
    var positives = 0
    let begin = now()
    var rounds = 0
    while now() - begin < seconds * 5 {
        for key in keys where key.mayBeListed(in: filter) { positives += 1 }
        rounds += 1
    }
    print(String(format: "streaming_prefilter_ns=%.0f positives=%d", (now() - begin) / Double(rounds * keys.count) * 1e9, positives))
    exit(0)
}

// `netext-bench-urlfilter SECONDS transport`: only the transport under a PIR exchange, a
// query-sized body (28 KiB) to an echo server and back, one at a time, plain HTTP/1.1 and
// HTTPS/2 alternating request by request; the medians and the median of the paired differences
// (for profilers, and to tell the transport's share of the PIR verdict's overhead).
if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "transport" {
    // NETEXT_BENCH_ECHO_BUSY_MS=N: the echo works N ms on both cores first, as a PIR query does;
    // NETEXT_BENCH_ECHO_IDLE_MS=N: it sleeps N ms first (the threads of the exchange fall idle).
    let environment = ProcessInfo.processInfo.environment
    let busy = Echo(busyMilliseconds: Int(environment["NETEXT_BENCH_ECHO_BUSY_MS"] ?? "") ?? 0,
                    idleMilliseconds: Int(environment["NETEXT_BENCH_ECHO_IDLE_MS"] ?? "") ?? 0)
    let plain = HTTPServer(responder: busy, logger: quiet)
    let plainPort = try await plain.start(host: "127.0.0.1", port: 0)
    let secure = HTTPServer(responder: busy, logger: quiet, tls: try ServerTLS(certificateFile: tlsDirectory + "/pir.crt", keyFile: tlsDirectory + "/pir.key"))
    let securePort = try await secure.start(host: "127.0.0.1", port: 0)
    let plainTransport = DirectTransport()
    let secureTransport = DirectTransport(tls: try ClientTLS(caFile: tlsDirectory + "/ca.crt"))
    let body = [UInt8](repeating: 0x5a, count: 28 * 1024)
    func exchange(_ transport: DirectTransport, _ port: Int, _ scheme: String) async throws -> Double {
        let begin = now()
        let answer = try await transport.send(ServiceRequest(method: "POST", url: URL(string: "\(scheme)://127.0.0.1:\(port)/echo")!,
                                                           headers: [("Content-Type", "application/octet-stream")], body: body))
        guard answer.status == 200, answer.body.count == body.count else { fatalError("echo answered \(answer.status) with \(answer.body.count) bytes") }
        return (now() - begin) * 1000
    }
    for _ in 0..<50 { _ = try await exchange(plainTransport, plainPort, "http"); _ = try await exchange(secureTransport, securePort, "https") }
    // NETEXT_BENCH_ECHO_SERVE_SECONDS=N: only serve the echo for N seconds (at most 600), the
    // ports on standard error, for a client of one's own (h2load: the server side alone).
    if let serve = Int(environment["NETEXT_BENCH_ECHO_SERVE_SECONDS"] ?? "") {
        FileHandle.standardError.write(Data("plain_port=\(plainPort) tls_port=\(securePort)\n".utf8))
        try await Task.sleep(for: .seconds(min(max(serve, 1), 600)))
        exit(0)
    }
    // NETEXT_BENCH_TRANSPORT=http|https: that one alone, 20,000 exchanges (for `perf stat`).
    if let only = environment["NETEXT_BENCH_TRANSPORT"] {
        let (transport, port) = only == "https" ? (secureTransport, securePort) : (plainTransport, plainPort)
        var times: [Double] = []
        for _ in 0..<20_000 { times.append(try await exchange(transport, port, only)) }
        print(String(format: "transport_28k_echo_ms_%@_p50=%.3f exchanges=%d", only, percentile(times, 0.5), times.count))
        exit(0)
    }
    var plainMs: [Double] = [], secureMs: [Double] = [], differences: [Double] = []
    let deadline = now() + seconds * 5
    while now() < deadline, plainMs.count < 100_000 {
        let plainFirst = plainMs.count % 2 == 0
        var plainTime = plainFirst ? try await exchange(plainTransport, plainPort, "http") : 0
        let secureTime = try await exchange(secureTransport, securePort, "https")
        if !plainFirst { plainTime = try await exchange(plainTransport, plainPort, "http") }
        plainMs.append(plainTime); secureMs.append(secureTime); differences.append(secureTime - plainTime)
    }
    print(String(format: "transport_28k_echo_ms_plain_http1_p50=%.3f transport_28k_echo_ms_https_h2_p50=%.3f paired_difference_ms_p50=%.3f exchanges_each=%d",
                 percentile(plainMs, 0.5), percentile(secureMs, 0.5), percentile(differences, 0.5), plainMs.count))
    exit(0)
}

// MARK: Blind RSA: raw signing vs the issuer over HTTP.
let issuerKeys = try IssuerKeyRing(directory: root + "/issuer-keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
let issuerKey = issuerKeys.keys[0].key
let challenge = TokenChallenge(issuerName: "127.0.0.1", originInfo: ["pir.bench"])
let batch = 16
let requests = try (0..<batch).map { _ in try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: issuerKey.publicKeyDER).0 }
for threads in [1, 2] {
    let raw = try await rate(workers: threads) {
        for request in requests { _ = try issuerKey.respond(to: request) }
        return requests.count
    }
    print(String(format: "raw_blind_rsa_signatures_per_s_%dthreads=%.0f", threads, raw))
}
let issuerServer = HTTPServer(responder: IssuerResponder(
    keys: issuerKeys, credentials: BearerCredentials(credentials: ["bench-credential-0123456789"]),
    limiter: IssuanceRateLimiter(perHour: 1e12, burst: 1e12)), logger: quiet, eventLoops: 2)
let issuerPort = try await issuerServer.start(host: "127.0.0.1", port: 0)
let direct = DirectTransport()
/// Batches of fresh token requests: the issuer refuses a blinded message it has signed before
/// (409, a replay), so every exchange needs new ones. Made before the clock starts (the client's
/// blinding is not the issuer's work); made on demand if the run outlasts them.
final class FreshIssueBodies: Sendable {
    let bodies: Mutex<[[UInt8]]>
    let make: @Sendable () throws -> [UInt8]
    init(count: Int, make: @escaping @Sendable () throws -> [UInt8]) throws {
        self.make = make
        bodies = Mutex(try (0..<count).map { _ in try make() })
    }
    func next() throws -> [UInt8] { try bodies.withLock { $0.popLast() } ?? make() }
}
let issuerKeyDER = issuerKey.publicKeyDER
let fresh = try FreshIssueBodies(count: Int(seconds * 300) + 64) {
    try (0..<batch).flatMap { _ in try BlindRSAIssuance.makeRequest(challenge: challenge, issuerKeyDER: issuerKeyDER).0.encoded() }
}
for clients in [1, 2] {
    let issued = try await rate(workers: clients) {
        let issueRequest = ServiceRequest(
            method: "POST", url: URL(string: "http://127.0.0.1:\(issuerPort)/issue")!,
            headers: [("Content-Type", "application/private-token-request"), ("Authorization", "Bearer bench-credential-0123456789")], body: try fresh.next())
        let answer = try await direct.send(issueRequest)
        guard answer.status == 200 else { throw URLFilterError.server(status: answer.status, message: answer.message) }
        return batch
    }
    print(String(format: "issuer_tokens_per_s_%dclients=%.0f", clients, issued))
}
// The anchor again, after the issuer runs (this VM's speed drifts; the ratio uses the mean).
for threads in [1, 2] {
    let raw = try await rate(workers: threads) {
        for request in requests { _ = try issuerKey.respond(to: request) }
        return requests.count
    }
    print(String(format: "raw_blind_rsa_signatures_after_per_s_%dthreads=%.0f", threads, raw))
}

// MARK: HPKE: raw open+seal vs the gateway over HTTP (forwarding to an in-process target).
struct Echo: HTTPResponder {
    /// Milliseconds of work on both cores before answering (as a PIR query's), or none.
    var busyMilliseconds = 0
    /// Milliseconds asleep before answering (every thread of the exchange idle), or none.
    var idleMilliseconds = 0
    func bodyLimit(method: String, path: String) -> Int { 1 << 20 }
    func endpointLabel(path: String) -> String { "echo" }
    func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
        if busyMilliseconds > 0 {
            let until = now() + Double(busyMilliseconds) / 1000
            DispatchQueue.concurrentPerform(iterations: 2) { _ in while now() < until {} }
        }
        if idleMilliseconds > 0 { usleep(UInt32(idleMilliseconds * 1000)) }
        return HTTPServerResponse(contentType: "application/octet-stream", body: request.body)
    }
}
let gatewayKeys = try GatewayKeyRing(directory: root + "/gateway-keys", schedule: try KeyRotationSchedule(lifetime: 86400, overlap: 3600))
let gatewayEntry = gatewayKeys.keys[0]
let inner = BinaryHTTPRequest(method: "POST", scheme: "http", authority: "echo.bench", path: "/", headers: [("content-type", "application/x-protobuf")],
                              content: [UInt8](repeating: 7, count: 1024)).encoded()
let sealed = try ObliviousHTTP.encapsulateRequest(inner, config: gatewayEntry.config)
let rawHPKE = try await rate(workers: 1) {
    for _ in 0..<64 {
        let opened = try ObliviousHTTP.decapsulateRequest(sealed.message, keyID: gatewayEntry.keyID, privateKey: gatewayEntry.privateKey)
        _ = try opened.context.sealResponse(opened.request)
    }
    return 64
}
print(String(format: "raw_hpke_open_seal_per_s_1thread=%.0f", rawHPKE))
// The whole exchange as the benchmark's client and gateway do it in this one process: client
// seal, gateway open and seal, client open (the gateway figure below pays for all four).
for threads in [1, 2] {
    let rawExchange = try await rate(workers: threads) {
        for _ in 0..<32 {
            let request = try ObliviousHTTP.encapsulateRequest(inner, config: gatewayEntry.config)
            let opened = try ObliviousHTTP.decapsulateRequest(request.message, keyID: gatewayEntry.keyID, privateKey: gatewayEntry.privateKey)
            _ = try request.context.openResponse(try opened.context.sealResponse(opened.request))
        }
        return 32
    }
    print(String(format: "raw_hpke_exchange_per_s_%dthreads=%.0f", threads, rawExchange))
}
let echoServer = HTTPServer(responder: Echo(), logger: quiet)
let echoPort = try await echoServer.start(host: "127.0.0.1", port: 0)
let gatewayServer = HTTPServer(responder: GatewayResponder(keys: gatewayKeys, targets: ["echo.bench": URL(string: "http://127.0.0.1:\(echoPort)")!]),
                               logger: quiet, eventLoops: 2)
let gatewayPort = try await gatewayServer.start(host: "127.0.0.1", port: 0)
let gatewayURL = URL(string: "http://127.0.0.1:\(gatewayPort)/gateway")!
/// Gateway requests per second with 1 and 4 clients through `transport`, printed as `key`.
func measureGateway(_ url: URL, through transport: any ServiceTransport, key: String) async throws {
    for clients in [1, 4] {
        let handled = try await rate(workers: clients) {
            let request = try ObliviousHTTP.encapsulateRequest(inner, config: gatewayEntry.config)
            let answer = try await transport.send(ServiceRequest(method: "POST", url: url, headers: [("Content-Type", "message/ohttp-req")], body: request.message))
            guard answer.status == 200 else { throw URLFilterError.server(status: answer.status, message: answer.message) }
            _ = try request.context.openResponse(answer.body)
            return 1
        }
        print("\(key)_\(clients)clients=" + String(format: "%.0f", handled))
    }
}
try await measureGateway(gatewayURL, through: direct, key: "gateway_requests_per_s")
// The same gateway over TLS, as Apple's relay reaches it: HTTPS with HTTP/2 (ALPN) on pooled
// connections, the certificate for 127.0.0.1 from the lab CA; the hop to the target stays plain.
let tlsGatewayServer = HTTPServer(responder: GatewayResponder(keys: gatewayKeys, targets: ["echo.bench": URL(string: "http://127.0.0.1:\(echoPort)")!]),
                                  logger: quiet, eventLoops: 2,
                                  tls: try ServerTLS(certificateFile: tlsDirectory + "/pir.crt", keyFile: tlsDirectory + "/pir.key"))
let tlsGatewayPort = try await tlsGatewayServer.start(host: "127.0.0.1", port: 0)
let tlsGatewayURL = URL(string: "https://127.0.0.1:\(tlsGatewayPort)/gateway")!
let tlsDirect = DirectTransport(tls: try ClientTLS(caFile: tlsDirectory + "/ca.crt"))
try await measureGateway(tlsGatewayURL, through: tlsDirect, key: "gateway_https_h2_requests_per_s")
await tlsGatewayServer.shutdown()

// MARK: Verdicts: a Bloom negative in process, and positives through the whole private path.
let blocked = (0..<20_000).map { "https://blocked\($0).example/" }
let builder = URLFilterDatabaseBuilder(falsePositiveRate: 0.001, useCase: "org.netext.bench.url.filtering")
let summary = try builder.build(list: blocked.joined(separator: "\n"), output: root + "/db")
let prefilter = try BloomFilter(data: [UInt8](try Data(contentsOf: URL(fileURLWithPath: root + "/db/prefilter.bin"))),
                                bitCount: summary.bitCount, hashCount: summary.hashCount, murmurSeed: 0)
let verifier = PrivateTokenVerifier(
    issuerName: "issuer.bench", originName: "pir.bench", directoryURL: URL(string: "http://127.0.0.1:\(issuerPort)\(IssuerDirectory.wellKnownPath)")!,
    spent: try SpentTokenStore(path: root + "/spent.sqlite"), logger: quiet)
let pirServer = PIRHTTPServer(handler: PIRRequestHandler(useCases: try PIRDatabaseDirectory.load(root: root + "/db", threads: 2)), logger: quiet, authorizer: verifier)
let pirPort = try await pirServer.start(host: "127.0.0.1", port: 0)
let fullGateway = HTTPServer(responder: GatewayResponder(keys: gatewayKeys, targets: [
    "pir.bench": URL(string: "http://127.0.0.1:\(pirPort)")!, "issuer.bench": URL(string: "http://127.0.0.1:\(issuerPort)")!,
]), logger: quiet)
let fullGatewayPort = try await fullGateway.start(host: "127.0.0.1", port: 0)
let relayServer = HTTPServer(responder: RelayResponder(
    gatewayURL: URL(string: "http://127.0.0.1:\(fullGatewayPort)/gateway")!, keysURL: URL(string: "http://127.0.0.1:\(fullGatewayPort)/ohttp-keys")!), logger: quiet)
let relayPort = try await relayServer.start(host: "127.0.0.1", port: 0)
let oblivious = ObliviousTransport(relayURL: URL(string: "http://127.0.0.1:\(relayPort)/relay")!)
let tokens = PrivacyPassClient(issuerURL: URL(string: "http://issuer.bench")!, credential: "bench-credential-0123456789",
                               transport: oblivious, store: try PrivateTokenStore(path: nil), batchSize: 16)
let client = PIRHTTPClient(server: URL(string: "http://pir.bench")!, useCase: "org.netext.bench.url.filtering",
                           transport: TokenAuthenticatingTransport(inner: oblivious, tokens: tokens))
let lookup = URLFilterLookup(prefilter: prefilter, client: client, failClosed: false)

// Bloom negatives: distinct URLs (no cache), one actor call each; URLs whose keys pass the
// prefilter (false positives) are left out, so only the prefilter path is timed.
let candidates = (0..<100_000).map { index in
    index % 2 == 0 ? "https://www.allowed\(index).example/" : "https://news.allowed\(index).example/section/article-\(index).html?ref=\(index)"
}
let negatives = try candidates.filter { try !URLFilterKey(parsing: $0).checkedKeys.contains(where: prefilter.contains) }
// Asked from a task on the cooperative pool (as netextd's control service asks), not from the
// main actor, whose hops to the pool cost a thread switch each way.
let negativeNs = await Task.detached {
    let begin = now()
    for url in negatives { _ = await lookup.decision(for: url) }
    return (now() - begin) / Double(negatives.count) * 1e9
}.value
print(String(format: "verdict_bloom_negative_ns=%.0f urls=%d", negativeNs, negatives.count))
var start = now()
start = now()
var hits = 0
for url in negatives where try URLFilterKey(parsing: url).checkedKeys.contains(where: prefilter.contains) { hits += 1 }
print(String(format: "parse_keys_prefilter_ns=%.0f (no actor hop)", (now() - start) / Double(negatives.count) * 1e9))
start = now()
for url in negatives { _ = try URLFilterKey(parsing: url) }
print(String(format: "parse_only_ns=%.0f", (now() - start) / Double(negatives.count) * 1e9))
let parsed = try negatives.map { try URLFilterKey(parsing: $0) }
start = now()
for key in parsed where key.mayBeListed(in: prefilter) { hits += 1 }
print(String(format: "streaming_prefilter_ns=%.0f", (now() - start) / Double(negatives.count) * 1e9))
start = now()
for url in negatives where URLFilterKey.mayBeListed(url: url, in: prefilter) != false { hits += 1 }
print(String(format: "check_from_text_ns=%.0f", (now() - start) / Double(negatives.count) * 1e9))

// Positives: the first warms up (config, key upload, first token batch), then distinct URLs.
start = now()
_ = await lookup.decision(for: blocked[0])
print(String(format: "first_positive_with_setup_ms=%.1f", (now() - start) * 1000))
var latencies: [Double] = []
let positiveStart = now()
for index in 1..<41 {
    let begin = now()
    let decision = await lookup.decision(for: blocked[index])
    latencies.append((now() - begin) * 1000)
    guard decision.verdict == .deny, decision.source == .pir else { fatalError("benchmark lookup gave \(decision)") }
}
let positives = Double(latencies.count) / (now() - positiveStart)
print(String(format: "positive_end_to_end_ms_p50=%.1f p90=%.1f verdicts_per_s_positive=%.1f tokens_fetched=%d",
             percentile(latencies, 0.5), percentile(latencies, 0.9), positives, await tokens.fetchedTokens))

// MARK: PIR per verdict over plain HTTP/1.1 and over HTTPS with HTTP/2, alternating in rounds:
// the same database and handler behind two listeners, a client of each straight to the server
// (no relay, no tokens), a distinct listed URL per verdict.
let sharedHandler = PIRRequestHandler(useCases: try PIRDatabaseDirectory.load(root: root + "/db", threads: 2))
let plainPIR = PIRHTTPServer(handler: sharedHandler, logger: quiet)
let plainPIRPort = try await plainPIR.start(host: "127.0.0.1", port: 0)
let tlsPIR = PIRHTTPServer(handler: sharedHandler, logger: quiet, tls: try ServerTLS(certificateFile: tlsDirectory + "/pir.crt", keyFile: tlsDirectory + "/pir.key"))
let tlsPIRPort = try await tlsPIR.start(host: "127.0.0.1", port: 0)
let useCase = "org.netext.bench.url.filtering"
let plainLookup = URLFilterLookup(
    prefilter: prefilter, client: PIRHTTPClient(server: URL(string: "http://127.0.0.1:\(plainPIRPort)")!, useCase: useCase), failClosed: false)
let tlsLookup = URLFilterLookup(
    prefilter: prefilter,
    client: PIRHTTPClient(server: URL(string: "https://127.0.0.1:\(tlsPIRPort)")!, useCase: useCase,
                          transport: DirectTransport(tls: try ClientTLS(caFile: tlsDirectory + "/ca.crt"))),
    failClosed: false)
// Warm-up: configuration, evaluation key upload, first connection.
_ = await plainLookup.decision(for: blocked[100])
_ = await tlsLookup.decision(for: blocked[101])
// Paired: each listed URL asked of both (each lookup has its own cache), which one first
// alternating, so the URL's shard and this VM's drift fall on both alike; 120 pairs, the
// medians of each and of the paired differences.
var plainMs: [Double] = [], tlsMs: [Double] = [], pairedDifferences: [Double] = []
for pair in 0..<120 {
    let url = blocked[200 + pair]
    var times: [Bool: Double] = [:]
    for isTLS in pair % 2 == 0 ? [false, true] : [true, false] {
        let begin = now()
        let decision = await (isTLS ? tlsLookup : plainLookup).decision(for: url)
        guard decision.verdict == .deny, decision.source == .pir else { fatalError("benchmark lookup gave \(decision)") }
        times[isTLS] = (now() - begin) * 1000
    }
    plainMs.append(times[false]!); tlsMs.append(times[true]!); pairedDifferences.append(times[true]! - times[false]!)
}
let plainMedian = percentile(plainMs, 0.5), tlsMedian = percentile(tlsMs, 0.5)
print(String(format: "pir_verdict_ms_plain_http1_p50=%.2f pir_verdict_ms_https_h2_p50=%.2f https_h2_over_plain=%.3f paired_difference_ms_p50=%.3f verdicts_each=%d",
             plainMedian, tlsMedian, tlsMedian / plainMedian, percentile(pairedDifferences, 0.5), plainMs.count))
await plainPIR.shutdown(); await tlsPIR.shutdown()
await relayServer.shutdown(); await fullGateway.shutdown(); await pirServer.shutdown()
await gatewayServer.shutdown(); await echoServer.shutdown(); await issuerServer.shutdown()
