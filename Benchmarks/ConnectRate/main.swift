// Connection-rate benchmark tool for the content filter (scripts/bench-filter).
//   netext-bench-connect serve PORT [THREADS]
//       accepts connections on [::]:PORT; each: read the request, write a short HTTP
//       response, close.
//   netext-bench-connect connect HOST PORT SECONDS [THREADS]
//       opens connections as fast as it can for SECONDS (bounded), each: connect, send a short
//       HTTP/1.1 GET, read the answer, close; prints connections per second and round-trip
//       latency percentiles (connect to answer) in microseconds.
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("netext-bench-connect: \(message)\n".utf8))
    exit(1)
}

func port(_ text: String) -> UInt16 {
    guard let value = UInt16(text), value > 0 else { fail("'\(text)' is not a port") }
    return value
}

func serve(port: UInt16, threads: Int) -> Never {
    let listener = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { fail("socket: \(String(cString: strerror(errno)))") }
    var off: Int32 = 0, on: Int32 = 1
    setsockopt(listener, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = port.bigEndian
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
    guard bound == 0, listen(listener, 4096) == 0 else { fail("bind/listen :\(port): \(String(cString: strerror(errno)))") }
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    for _ in 0..<threads {
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            let response = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { continue }
                if recv(connection, &buffer, buffer.count, 0) > 0 { _ = send(connection, response, response.count, Int32(MSG_NOSIGNAL)) }
                close(connection)
            }
        }
    }
    while true { sleep(3600) }
}

func connectLoop(host: String, port: UInt16, seconds: Double, threads: Int) {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var found: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &found) == 0, let info = found else { fail("cannot resolve \(host)") }
    let family = info.pointee.ai_family
    let addressLength = info.pointee.ai_addrlen
    let address = Array(UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: Int(addressLength)))
    freeaddrinfo(found)
    let deadline = Date().addingTimeInterval(seconds)
    final class Results: Sendable {
        let value = Mutex<(latencies: [Double], failures: Int)>(([], 0))
    }
    let results = Results()
    let group = DispatchGroup()
    let started = Date()
    for _ in 0..<threads {
        group.enter()
        Thread.detachNewThread {
            var local: [Double] = []
            var localFailures = 0
            let request = Array("GET /bench HTTP/1.1\r\nHost: bench.test\r\nUser-Agent: netext-bench-connect\r\n\r\n".utf8)
            var answer = [UInt8](repeating: 0, count: 2048)
            // Bounded: at most 2 million connections per thread, and never past the deadline.
            for _ in 0..<2_000_000 {
                if Date() >= deadline { break }
                let begin = DispatchTime.now().uptimeNanoseconds
                let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
                var linger = linger(l_onoff: 1, l_linger: 0)  // close with RST: no TIME_WAIT pile-up
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                var timeout = timeval(tv_sec: 3, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let connected = address.withUnsafeBytes { connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), addressLength) == 0 }
                let ok = connected && send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count && recv(fd, &answer, answer.count, 0) > 0
                close(fd)
                if ok {
                    local.append(Double(DispatchTime.now().uptimeNanoseconds - begin) / 1_000)
                } else {
                    localFailures += 1
                }
            }
            results.value.withLock { results in
                results.latencies += local
                results.failures += localFailures
            }
            group.leave()
        }
    }
    group.wait()
    let elapsed = Date().timeIntervalSince(started)
    let (unsorted, failures) = results.value.withLock { ($0.latencies, $0.failures) }
    let latencies = unsorted.sorted()
    func percentile(_ p: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
    print(String(format: "connections=%d failures=%d seconds=%.2f conn_per_s=%.0f rtt_p50_us=%.0f rtt_p99_us=%.0f",
                 latencies.count, failures, elapsed, Double(latencies.count) / elapsed, percentile(0.5), percentile(0.99)))
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "serve" where arguments.count >= 2:
    serve(port: port(arguments[1]), threads: arguments.count > 2 ? Int(arguments[2]) ?? 4 : 4)
case "connect" where arguments.count >= 4:
    connectLoop(host: arguments[1], port: port(arguments[2]), seconds: min(Double(arguments[3]) ?? 5, 120),
                threads: arguments.count > 4 ? Int(arguments[4]) ?? 2 : 2)
default:
    fail("usage: netext-bench-connect serve PORT [THREADS] | connect HOST PORT SECONDS [THREADS]")
}
