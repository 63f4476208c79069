// Bloom prefilter lookups per second on one core, for scripts/bench-bloom.
// Usage: netext-bench-bloom [KEYS] [LOOKUPS]   Prints key=value lines.
import BloomFilter
import Foundation

let arguments = CommandLine.arguments
let keyCount = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
let lookupCount = arguments.count > 2 ? Int(arguments[2]) ?? 20_000_000 : 20_000_000

var filter = try BloomFilter(capacity: keyCount, falsePositiveRate: 0.001, murmurSeed: 0x5bd1_e995)
let buildStart = ContinuousClock.now
for index in 0..<keyCount { filter.insert("blocked-\(index).example.com/") }
let buildTime = ContinuousClock.now - buildStart

/// All keys in one contiguous buffer, and each key's range in it.
func prepare(_ keys: [String]) -> (storage: [UInt8], ranges: [Range<Int>]) {
    var storage: [UInt8] = []
    var ranges: [Range<Int>] = []
    for key in keys {
        let start = storage.count
        storage.append(contentsOf: key.utf8)
        ranges.append(start..<storage.count)
    }
    return (storage, ranges)
}

/// Lookups per second over prepared keys (so the loop measures lookups, not key building).
func measure(_ keys: [String], in filter: BloomFilter) -> (millionsPerSecond: Double, hits: Int, averageLength: Int) {
    let (storage, ranges) = prepare(keys)
    var hits = 0
    let start = ContinuousClock.now
    storage.withUnsafeBytes { all in
        for index in 0..<lookupCount {
            let range = ranges[index & (ranges.count - 1)]
            if filter.contains(bytes: UnsafeRawBufferPointer(rebasing: all[range])) { hits += 1 }
        }
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(lookupCount) / seconds / 1e6, hits, storage.count / keys.count)
}

/// The same lookups four at a time (`contains(_:_:_:_:)`), as a URL's keys are checked.
func measureBatched(_ keys: [String], in filter: BloomFilter) -> (millionsPerSecond: Double, hits: Int) {
    let (storage, ranges) = prepare(keys)
    var hits = 0
    let start = ContinuousClock.now
    storage.withUnsafeBytes { all in
        var index = 0
        while index < lookupCount {
            let mask = ranges.count - 1
            let r = filter.contains(
                UnsafeRawBufferPointer(rebasing: all[ranges[index & mask]]), UnsafeRawBufferPointer(rebasing: all[ranges[(index + 1) & mask]]),
                UnsafeRawBufferPointer(rebasing: all[ranges[(index + 2) & mask]]), UnsafeRawBufferPointer(rebasing: all[ranges[(index + 3) & mask]]))
            hits += (r.0 ? 1 : 0) + (r.1 ? 1 : 0) + (r.2 ? 1 : 0) + (r.3 ? 1 : 0)
            index += 4
        }
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(lookupCount) / seconds / 1e6, hits)
}

let hosts = (0..<4096).map { "site\($0 &* 2654435761 % 1_000_003).example" }
let urls = (0..<4096).map { "www.site-\($0 &* 2654435761 % 1_000_003).example.org/path/\($0)" }
let hostResult = measure(hosts, in: filter)
let urlResult = measure(urls, in: filter)
let hostBatched = measureBatched(hosts, in: filter)
let urlBatched = measureBatched(urls, in: filter)
print("bloom_keys=\(keyCount)")
print("bloom_bit_count=\(filter.bitCount)")
print("bloom_hash_count=\(filter.hashCount)")
print("bloom_bytes=\(filter.data.count)")
print("bloom_build_seconds=\(String(format: "%.2f", Double(buildTime.components.seconds) + Double(buildTime.components.attoseconds) / 1e18))")
print("bloom_host_key_bytes=\(hostResult.averageLength)")
print("bloom_host_lookups_per_second_one_core=\(String(format: "%.1f", hostResult.millionsPerSecond))M")
print("bloom_url_key_bytes=\(urlResult.averageLength)")
print("bloom_url_lookups_per_second_one_core=\(String(format: "%.1f", urlResult.millionsPerSecond))M")
print("bloom_host_lookups_per_second_one_core_four_at_a_time=\(String(format: "%.1f", hostBatched.millionsPerSecond))M")
print("bloom_url_lookups_per_second_one_core_four_at_a_time=\(String(format: "%.1f", urlBatched.millionsPerSecond))M")
print("bloom_lookup_hits=\(hostResult.hits + urlResult.hits)")
print("bloom_batched_hits_match=\(hostBatched.hits + urlBatched.hits == hostResult.hits + urlResult.hits)")
print("bloom_target_lookups_per_second=20.0M")
