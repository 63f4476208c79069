// Keyword-PIR benchmark at the URL filter's parameters (N = 4096, t = 17, Q ≈ 2^55, P ≈ 2^28),
// the shape of ../shared/bench/pir-anchor.md (1-byte values, two cuckoo hash functions).
// Usage: netext-bench-pir [ROWS] [QUERIES] [ROWS_PER_SHARD]
import Foundation
import HomomorphicEncryption
import PrivateInformationRetrieval

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
func peakRSSMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return Double(line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0) / 1024
    }
    return 0
}
func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }

let arguments = CommandLine.arguments
let rowCount = arguments.count > 1 ? Int(arguments[1]) ?? 100_000 : 100_000
let queryCount = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
let perShard = arguments.count > 3 ? Int(arguments[3]) ?? rowCount : rowCount
let shardCount = max(1, (rowCount + perShard - 1) / perShard)
let context = try BFVContext(parameters: .n4096LogQ27_28_28LogT5)
let parameters = try KeywordPirParameters(hashFunctionCount: 2, bucketCapacity: 8, valueSize: 1, shardCount: shardCount)
let rows = (0..<rowCount).map { KeywordValuePair(keyword: "www.site\($0).example/", value: [1]) }
let ratio = ProcessInfo.processInfo.environment["NETEXT_PIR_DIMENSION_RATIO"].flatMap(Double.init) ?? 4

var start = now()
let database = try KeywordDatabase(rows: rows, parameters: parameters, scheme: context, dimensionRatio: ratio)
let processTime = now() - start
let shard = database.configurations[0]
print("rows=\(rowCount) shards=\(shardCount) buckets_shard0=\(shard.bucketCount) plaintexts_shard0=\(shard.indexParameters.plaintextCount) dimensions=\(shard.indexParameters.dimensions)")

let server1 = try KeywordPirServer(scheme: context, database: database, threads: 1)
let server2 = try KeywordPirServer(scheme: context, database: database, threads: 2)
let client = try KeywordPirClient(scheme: context, parameters: parameters, shards: database.configurations)
start = now()
let secretKey = context.generateSecretKey()
let evaluationKey = try client.generateEvaluationKey(secretKey: secretKey)
let keygenTime = now() - start
let evaluationKeyBytes = context.serialize(evaluationKey).byteCount

var times1: [Double] = [], times2: [Double] = [], queryTimes: [Double] = [], decryptTimes: [Double] = []
var queryBytes = 0, responseBytes = 0, budgets: [Int] = []
for i in 0..<queryCount {
    let present = i.isMultiple(of: 2)
    let keyword = present ? "www.site\(i * 7919 % rowCount).example/" : "absent\(i).example/"
    var t0 = now()
    let query = try client.generateQuery(keyword: Array(keyword.utf8), secretKey: secretKey)
    queryTimes.append(now() - t0)
    queryBytes = query.query.ciphertexts.reduce(0) { $0 + context.serialize($1).byteCount }
    t0 = now()
    let response = try server1.respond(to: query.query, shard: query.shard, evaluationKey: evaluationKey)
    times1.append(now() - t0)
    t0 = now()
    let response2 = try server2.respond(to: query.query, shard: query.shard, evaluationKey: evaluationKey)
    times2.append(now() - t0)
    // What travels: the responses as serialized for decryption.
    let wire = try response.ciphertexts.map { try context.deserialize(context.serialize($0, forDecryption: true)) }
    responseBytes = response.ciphertexts.reduce(0) { $0 + context.serialize($1, forDecryption: true).byteCount }
    t0 = now()
    let value = try client.decrypt(IndexPirResponse(ciphertexts: wire), for: query, secretKey: secretKey)
    decryptTimes.append(now() - t0)
    guard value == (present ? [1] : nil), try client.decrypt(response2, for: query, secretKey: secretKey) == value else {
        print("WRONG ANSWER for \(keyword)")
        exit(1)
    }
    budgets = response.ciphertexts.map { context.noiseBudget($0, secretKey: secretKey) }
}
print(String(format: "process_s=%.2f peak_rss_mib=%.0f", processTime, peakRSSMiB()))
print(String(format: "evaluation_key_kb=%.1f query_kb=%.1f response_kb=%.1f", Double(evaluationKeyBytes) / 1000, Double(queryBytes) / 1000, Double(responseBytes) / 1000))
print(String(format: "server_ms_1thread=%.1f (min %.1f) server_ms_2threads=%.1f (min %.1f)",
             median(times1) * 1000, times1.min()! * 1000, median(times2) * 1000, times2.min()! * 1000))
print(String(format: "client_keygen_ms=%.1f client_query_ms=%.2f client_decrypt_ms=%.2f", keygenTime * 1000, median(queryTimes) * 1000, median(decryptTimes) * 1000))
print("response_noise_budget_bits=\(budgets.map(String.init).joined(separator: "/"))")
