// The MASQUE relay benchmark's client side (scripts/bench-relay starts `netext-server relay`):
//   netext-bench-relay RELAY_PORT CA_FILE TOKEN FLOWS MEGABYTES
// On 127.0.0.1 only: an echo target and a sink target of its own, a RelayClient to the relay.
//   - new flows over the established relay connection, one after another: the time from asking
//     for the flow to the first byte echoed back (p50/p90/p99, microseconds; target < 1 ms);
//   - one bulk TCP flow of MEGABYTES to the sink, through the relay and directly (Gbit/s);
//   - with PP_RELAY_PORT ISSUER_URL ISSUER_CREDENTIAL_FILE (a second relay taking Privacy Pass
//     tokens of that issuer): new relay connections each carrying one flow, to the first byte
//     back, through the bearer relay and through the token relay (a fresh token each, fetched in
//     batches of 8 when the cache is empty); the very first (a 407, then the first batch) apart.
import Foundation
import Glibc
import MASQUERelay
import NIOSSL
import Synchronization

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("netext-bench-relay: \(message)\n".utf8))
    exit(1)
}

/// A TCP listener on 127.0.0.1 (a free port), a thread per connection running `serve`.
func listenOnLoopback(_ serve: @escaping @Sendable (Int32) -> Void) -> UInt16 {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }) == 0, listen(listener, 128) == 0 else {
        fail("cannot listen on 127.0.0.1")
    }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
    Thread {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            Thread { serve(client) }.start()
        }
    }.start()
    return UInt16(bigEndian: address.sin_port)
}

/// Connects to 127.0.0.1:`port`.
func dial(_ port: UInt16) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
    guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }) == 0 else {
        fail("cannot connect to 127.0.0.1:\(port)")
    }
    return fd
}

let arguments = CommandLine.arguments
guard arguments.count == 6 || arguments.count == 9, let relayPort = Int(arguments[1]), let flows = Int(arguments[4]), let megabytes = Int(arguments[5]),
      (1...100_000).contains(flows), (1...10_000).contains(megabytes) else {
    fail("usage: netext-bench-relay RELAY_PORT CA_FILE TOKEN FLOWS(1-100000) MEGABYTES(1-10000) [PP_RELAY_PORT ISSUER_URL ISSUER_CREDENTIAL_FILE]")
}

// The targets: an echo, and a sink that counts what it read and says so when the sender ends.
let echoPort = listenOnLoopback { fd in
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        _ = send(fd, buffer, count, Int32(MSG_NOSIGNAL))
    }
    close(fd)
}
let sinkDone = Mutex<[Int]>([])
let sinkPort = listenOnLoopback { fd in
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var total = 0
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        total += count
    }
    close(fd)
    sinkDone.withLock { $0.append(total) }
}
// The "app" side of each flow: a loopback pair whose far end the client is given.
let pairs = Mutex<[Int32]>([])
let pairPort = listenOnLoopback { fd in pairs.withLock { $0.append(fd) } }
func appAndFlow() -> (app: Int32, flow: Int32) {
    let app = dial(pairPort)
    for _ in 0..<5_000 {
        if let flow = pairs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return (app, flow) }
        usleep(20)
    }
    fail("the flow side of a pair never arrived")
}

func bulk(into fd: Int32, bytes: Int) {
    let chunk = [UInt8](repeating: 0x5A, count: 256 * 1024)
    var sent = 0
    while sent < bytes {
        let count = send(fd, chunk, min(chunk.count, bytes - sent), Int32(MSG_NOSIGNAL))
        if count <= 0 { fail("send: \(String(cString: strerror(errno)))") }
        sent += count
    }
    shutdown(fd, Int32(SHUT_WR))
}

func waitForSink(_ count: Int, seconds: Int = 120) -> Int {
    for _ in 0..<(seconds * 1_000) {
        if let total = sinkDone.withLock({ $0.count >= count ? $0[count - 1] : nil }) { return total }
        usleep(1_000)
    }
    fail("the sink did not finish")
}

let roots = NIOSSLTrustRoots.certificates((try? NIOSSLCertificate.fromPEMFile(arguments[2])) ?? [])
let client: RelayClient
do { client = try await RelayClient.connect(host: "127.0.0.1", port: relayPort, trustRoots: roots, token: arguments[3]) } catch {
    fail("cannot reach the relay: \(error)")
}

func newFlow() async -> Duration {
    let pair = appAndFlow()
    defer { close(pair.app) }
    let started = ContinuousClock.now
    do { try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: echoPort) } catch { fail("a flow failed: \(error)") }
    var byte: UInt8 = 7
    _ = send(pair.app, &byte, 1, 0)
    guard recv(pair.app, &byte, 1, 0) == 1 else { fail("a flow's echo did not come back") }
    return ContinuousClock.now - started
}

for _ in 0..<min(50, flows) { _ = await newFlow() }
var setups: [Duration] = []
for _ in 0..<flows { setups.append(await newFlow()) }
setups.sort()
func microseconds(_ duration: Duration) -> Int { Int(duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000) }
let p50 = microseconds(setups[setups.count / 2]), p90 = microseconds(setups[setups.count * 9 / 10]), p99 = microseconds(setups[min(setups.count - 1, setups.count * 99 / 100)])
print("relay_new_flow_first_byte_us p50=\(p50) p90=\(p90) p99=\(p99) flows=\(flows)   (target p50 < 1000)")

let bytes = megabytes * 1_000_000
var started = ContinuousClock.now
let direct = dial(sinkPort)
bulk(into: direct, bytes: bytes)
var received = waitForSink(1)
close(direct)
let directSeconds = Double(microseconds(ContinuousClock.now - started)) / 1e6
guard received == bytes else { fail("the sink got \(received) of \(bytes) bytes directly") }

let pair = appAndFlow()
started = ContinuousClock.now
do { try await client.carry(socket: pair.flow, toHost: "127.0.0.1", port: sinkPort) } catch { fail("the bulk flow failed: \(error)") }
bulk(into: pair.app, bytes: bytes)
received = waitForSink(2)
close(pair.app)
let relaySeconds = Double(microseconds(ContinuousClock.now - started)) / 1e6
guard received == bytes else { fail("the sink got \(received) of \(bytes) bytes through the relay") }
let directGbps = Double(bytes) * 8 / directSeconds / 1e9, relayGbps = Double(bytes) * 8 / relaySeconds / 1e9
print(String(format: "direct_tcp_gbps=%.3f relay_tcp_gbps=%.3f relay_percent_of_direct=%.1f megabytes=%d", directGbps, relayGbps, 100 * relayGbps / directGbps, megabytes))
await client.close()

// New relay connections, one flow each: the bearer relay against the token relay.
if arguments.count == 9 {
    guard let tokenRelayPort = Int(arguments[6]), let issuerURL = URL(string: arguments[7]),
          let credential = (try? String(contentsOfFile: arguments[8], encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) else {
        fail("PP_RELAY_PORT ISSUER_URL ISSUER_CREDENTIAL_FILE: not a port, a URL and a readable file")
    }
    let tokens = PrivacyPassRelayTokens(issuerURL: issuerURL, credential: credential)
    func newConnection(port: Int, tokens: PrivacyPassRelayTokens?, token: String?) async -> Duration {
        let pair = appAndFlow()
        defer { close(pair.app) }
        let started = ContinuousClock.now
        let connection: RelayClient
        do { connection = try await RelayClient.connect(host: "127.0.0.1", port: port, trustRoots: roots, token: token, tokens: tokens) } catch {
            fail("cannot reach the relay on port \(port): \(error)")
        }
        do { try await connection.carry(socket: pair.flow, toHost: "127.0.0.1", port: echoPort) } catch { fail("a flow failed: \(error)") }
        var byte: UInt8 = 7
        _ = send(pair.app, &byte, 1, 0)
        guard recv(pair.app, &byte, 1, 0) == 1 else { fail("a flow's echo did not come back") }
        let elapsed = ContinuousClock.now - started
        await connection.close()
        return elapsed
    }
    let first = await newConnection(port: tokenRelayPort, tokens: tokens, token: nil)
    let connections = min(flows, 400)
    var bearer: [Duration] = [], privacyPass: [Duration] = []
    for _ in 0..<connections {
        bearer.append(await newConnection(port: relayPort, tokens: nil, token: arguments[3]))
        privacyPass.append(await newConnection(port: tokenRelayPort, tokens: tokens, token: nil))
    }
    func percentiles(_ values: [Duration]) -> String {
        let sorted = values.sorted()
        return "p50=\(microseconds(sorted[sorted.count / 2])) p90=\(microseconds(sorted[sorted.count * 9 / 10])) p99=\(microseconds(sorted[min(sorted.count - 1, sorted.count * 99 / 100)]))"
    }
    let fetched = await tokens.fetchedTokens
    print("relay_new_connection_first_byte_us bearer \(percentiles(bearer)) privacy_pass \(percentiles(privacyPass)) first_privacy_pass=\(microseconds(first)) connections=\(connections) tokens_fetched=\(fetched)")
}
