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

// Lookup keys prepared up front (typical URL-filter key lengths), so the loop measures lookups.
let probes: [[UInt8]] = (0..<4096).map { Array("www.site-\($0 &* 2654435761 % 1_000_003).example.org/path/\($0)".utf8) }
var hits = 0
let start = ContinuousClock.now
for index in 0..<lookupCount {
    let probe = probes[index & 4095]
    if probe.withUnsafeBytes({ filter.contains(bytes: $0) }) { hits += 1 }
}
let elapsed = start - ContinuousClock.now
let seconds = -Double(elapsed.components.seconds) - Double(elapsed.components.attoseconds) / 1e18
print("bloom_keys=\(keyCount)")
print("bloom_bit_count=\(filter.bitCount)")
print("bloom_hash_count=\(filter.hashCount)")
print("bloom_bytes=\(filter.data.count)")
print("bloom_build_seconds=\(String(format: "%.2f", Double(buildTime.components.seconds) + Double(buildTime.components.attoseconds) / 1e18))")
print("bloom_lookups_per_second_one_core=\(String(format: "%.1f", Double(lookupCount) / seconds / 1e6))M")
print("bloom_lookup_hits=\(hits)")
print("bloom_target_lookups_per_second=20.0M")
