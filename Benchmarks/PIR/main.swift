// Keyword-PIR benchmark at the URL filter's parameters (N = 4096, t = 17, Q ≈ 2^55).
// Usage: netext-bench-pir [ROWS] [QUERIES]
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

let arguments = CommandLine.arguments
let rowCount = arguments.count > 1 ? Int(arguments[1]) ?? 100_000 : 100_000
let queryCount = arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5
let context = try BFVContext(parameters: .n4096LogQ27_28_28LogT5)
let parameters = try KeywordPirParameters(hashFunctionCount: 2, bucketCapacity: 8, valueSize: 1, shardCount: 1)
let rows = (0..<rowCount).map { KeywordValuePair(keyword: "www.site\($0).example/", value: [1]) }

var start = now()
let ratio = ProcessInfo.processInfo.environment["NETEXT_PIR_DIMENSION_RATIO"].flatMap(Double.init) ?? 4
let database = try KeywordDatabase(rows: rows, parameters: parameters, scheme: context, dimensionRatio: ratio)
let processTime = now() - start
let shard = database.configurations[0]
print("rows=\(rowCount) buckets=\(shard.bucketCount) plaintexts=\(shard.indexParameters.plaintextCount) dimensions=\(shard.indexParameters.dimensions) galois=\(shard.indexParameters.galoisElements.count)")
print(String(format: "process_s=%.2f", processTime))

let server = KeywordPirServer(scheme: context, database: database, threads: 1)
let server2 = KeywordPirServer(scheme: context, database: database, threads: 2)
let client = try KeywordPirClient(scheme: context, parameters: parameters, shards: database.configurations)
start = now()
let secretKey = context.generateSecretKey()
let evaluationKey = try client.generateEvaluationKey(secretKey: secretKey)
print(String(format: "client_keygen_ms=%.1f", (now() - start) * 1000))

var serverTimes2: [Double] = []
var serverTimes: [Double] = [], queryTimes: [Double] = [], decryptTimes: [Double] = []
for i in 0..<queryCount {
    let present = i.isMultiple(of: 2)
    let keyword = present ? "www.site\(i * 7919 % rowCount).example/" : "absent\(i).example/"
    var t0 = now()
    let query = try client.generateQuery(keyword: Array(keyword.utf8), secretKey: secretKey)
    queryTimes.append(now() - t0)
    t0 = now()
    let response = try server.respond(to: query.query, shard: query.shard, evaluationKey: evaluationKey)
    serverTimes.append(now() - t0)
    t0 = now()
    let response2 = try server2.respond(to: query.query, shard: query.shard, evaluationKey: evaluationKey)
    serverTimes2.append(now() - t0)
    guard try client.decrypt(response2, for: query, secretKey: secretKey) == (present ? [1] : nil) else { print("WRONG ANSWER (2 threads)"); exit(1) }
    t0 = now()
    let value = try client.decrypt(response, for: query, secretKey: secretKey)
    decryptTimes.append(now() - t0)
    guard value == (present ? [1] : nil) else { print("WRONG ANSWER for \(keyword): \(String(describing: value))"); exit(1) }
    if i == 0 {
        let budgets = response.ciphertexts.map { context.noiseBudget($0, secretKey: secretKey) }
        print("response_noise_budget_bits=\(budgets)")
    }
}
func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
print(String(format: "server_ms_2threads=%.1f (min %.1f)", median(serverTimes2) * 1000, serverTimes2.min()! * 1000))
print(String(format: "server_ms_1thread=%.1f (min %.1f) client_query_ms=%.2f client_decrypt_ms=%.2f peak_rss_mib=%.0f",
             median(serverTimes) * 1000, serverTimes.min()! * 1000, median(queryTimes) * 1000, median(decryptTimes) * 1000, peakRSSMiB()))
