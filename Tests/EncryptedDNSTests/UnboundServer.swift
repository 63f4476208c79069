import Foundation
import NetExtTestSupport

/// Debian's unbound (nobody here wrote it) on loopback, serving DNS over TLS and DNS over
/// HTTPS (HTTP/2) with a certificate of the test CA's for the name `dns.lab.test` alone (no
/// address: swift-nio-ssl accepts a certificate that carries the peer's address whatever name
/// was asked for, so a name check needs a certificate without one), answering names
/// of lab.test from local data and refusing every other name (it never looks anything up).
/// `stop()` kills it and removes its directory.
final class UnboundServer: @unchecked Sendable {
    let certificates: TestCertificates
    let directory: String
    let tlsPort: Int
    let httpsPort: Int
    private let process: Process

    /// The names it answers (A records).
    static let records: [(String, String)] = [
        ("www.lab.test", "198.51.100.80"), ("mail.lab.test", "198.51.100.81"), ("corp.lab.test", "10.20.0.5"),
    ] + (0..<64).map { ("host\($0).lab.test", "10.1.0.\($0)") }

    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts it (idle TCP connections closed after `idleMilliseconds`) and waits until both
    /// ports listen (at most 10 s).
    /// Starts unbound off the task pool: its start is waited for with `usleep` polling (up to
    /// 10 s), which on one of the pool's two threads would hold every other test's servers.
    static func start(certificates: TestCertificates, idleMilliseconds: Int = 30_000) async throws -> UnboundServer {
        try await offPool { try UnboundServer(certificates: certificates, idleMilliseconds: idleMilliseconds) }
    }

    init(certificates: TestCertificates, idleMilliseconds: Int = 30_000) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/unbound") else {
            throw Missing(description: "unbound is not installed (scripts/lib/install-packages.sh installs it)")
        }
        self.certificates = certificates
        directory = NSTemporaryDirectory() + "netext-unbound-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let issued = Process()
        issued.executableURL = URL(fileURLWithPath: "/bin/sh")
        issued.arguments = ["-c", """
            set -e
            cd '\(directory)'
            openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=dns.lab.test -keyout dns.key -out dns.csr 2>/dev/null
            printf 'subjectAltName=DNS:dns.lab.test\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > dns.ext
            openssl x509 -req -in dns.csr -CA '\(certificates.caFile)' -CAkey '\(certificates.directory)/ca.key' -CAcreateserial -CAserial dns.srl -days 2 -extfile dns.ext -out dns.crt 2>/dev/null
            """]
        issued.standardInput = FileHandle.nullDevice
        try issued.run()
        waitForExit(issued, seconds: 60)
        guard issued.terminationStatus == 0 else { throw Missing(description: "openssl could not issue the DNS server's certificate") }
        tlsPort = try Self.freePort()
        httpsPort = try Self.freePort()
        let data = Self.records.map { "  local-data: \"\($0.0). A \($0.1)\"" }.joined(separator: "\n")
        let configuration = """
            server:
              username: ""
              chroot: ""
              directory: "\(directory)"
              pidfile: ""
              use-syslog: no
              logfile: "\(directory)/unbound.log"
              verbosity: 1
              log-queries: yes
              do-ip6: no
              port: \(try Self.freePort())
              interface: 127.0.0.1@\(tlsPort)
              interface: 127.0.0.1@\(httpsPort)
              tls-port: \(tlsPort)
              https-port: \(httpsPort)
              http-endpoint: "/dns-query"
              tls-service-key: "\(directory)/dns.key"
              tls-service-pem: "\(directory)/dns.crt"
              tcp-idle-timeout: \(idleMilliseconds)
              access-control: 127.0.0.0/8 allow
              module-config: "iterator"
              local-zone: "." refuse
              local-zone: "lab.test." static
            \(data)
            """
        try configuration.write(toFile: directory + "/unbound.conf", atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/unbound")
        process.arguments = ["-d", "-c", directory + "/unbound.conf"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if Self.listens(tlsPort) && Self.listens(httpsPort) { return }
            if !process.isRunning { break }
            usleep(50_000)
        }
        stop()
        throw Missing(description: "unbound did not start: \((try? String(contentsOfFile: directory + "/unbound.log", encoding: .utf8)) ?? "no log")")
    }

    /// The queries unbound logged (`NAME TYPE`).
    var loggedQueries: [String] {
        let log = (try? String(contentsOfFile: directory + "/unbound.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "info: 127.0.0.1 ") else { return nil }
            return line[range.upperBound...].split(separator: " ").prefix(2).joined(separator: " ")
        }
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            if !waitForExit(process, seconds: 10) {
                kill(process.processIdentifier, SIGKILL)
                waitForExit(process, seconds: 10)
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Missing(description: "no free loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func listens(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
