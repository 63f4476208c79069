import Foundation

/// A throw-away private CA and a server certificate it signed for `127.0.0.1`, `::1` and
/// `localhost` (P-256, valid two days), plus an unrelated CA that signed nothing here — made by
/// `openssl` (installed by scripts/lib/install-packages.sh) in a fresh temporary directory, which
/// `remove()` deletes.
public struct TestCertificates: Sendable {
    public let directory: String
    public var caFile: String { directory + "/ca.crt" }
    public var otherCAFile: String { directory + "/other-ca.crt" }
    public var certificateFile: String { directory + "/server.crt" }
    public var keyFile: String { directory + "/server.key" }
    /// A key that does not belong to `certificateFile`.
    public var otherKeyFile: String { directory + "/other-ca.key" }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Makes the files (a few hundred milliseconds), off the task pool.
    public static func make() async throws -> TestCertificates {
        let directory = NSTemporaryDirectory() + "netext-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory)'
            ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
            openssl req -x509 $ec -subj '/CN=NetExt Test CA' -days 2 -keyout ca.key -out ca.crt \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
            openssl req -x509 $ec -subj '/CN=Unrelated Test CA' -days 2 -keyout other-ca.key -out other-ca.crt \
              -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
            openssl req $ec -subj /CN=localhost -keyout server.key -out server.csr 2>/dev/null
            printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.crt 2>/dev/null
            chmod 0600 server.key ca.key other-ca.key
            """
        let status = try await run(script)
        let made = TestCertificates(directory: directory)
        guard status == 0, FileManager.default.fileExists(atPath: made.certificateFile) else {
            made.remove()
            throw Failure(description: "openssl could not make the test certificates (exit \(status))")
        }
        return made
    }

    /// A renewal of the server's certificate, issued by the unrelated CA (`otherCAFile`) to the
    /// same names, with a key of its own: written to `renewedCertificateFile` and `renewedKeyFile`.
    public func issueRenewal() async throws {
        let status = try await Self.run("""
            set -e
            cd '\(directory)'
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost -keyout renewed.key -out renewed.csr 2>/dev/null
            openssl x509 -req -in renewed.csr -CA other-ca.crt -CAkey other-ca.key -CAcreateserial -days 2 -extfile server.ext -out renewed.crt 2>/dev/null
            chmod 0600 renewed.key
            """)
        guard status == 0 else { throw Failure(description: "openssl could not issue the renewed certificate (exit \(status))") }
    }

    /// A client certificate the test CA signed (extended key usage clientAuth) and its key:
    /// `clientCertificateFile`, `clientKeyFile`, and both in `clientIdentityFile` (mode 600).
    public func issueClient() async throws {
        let status = try await Self.run("""
            set -e
            cd '\(directory)'
            umask 077
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=laptop.test -keyout client.key -out client.csr 2>/dev/null
            printf 'basicConstraints=CA:FALSE\\nextendedKeyUsage=clientAuth\\n' > client.ext
            openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.crt 2>/dev/null
            cat client.crt client.key > client-identity.pem
            """)
        guard status == 0 else { throw Failure(description: "openssl could not issue the client certificate (exit \(status))") }
    }

    public var clientCertificateFile: String { directory + "/client.crt" }
    public var clientKeyFile: String { directory + "/client.key" }
    public var clientIdentityFile: String { directory + "/client-identity.pem" }

    public var renewedCertificateFile: String { directory + "/renewed.crt" }
    public var renewedKeyFile: String { directory + "/renewed.key" }

    /// Runs a shell script off the task pool; its exit status.
    static func run(_ script: String) async throws -> Int32 {
        try await offPool { () -> Int32 in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", script]
            process.standardInput = FileHandle.nullDevice
            try process.run()
            guard waitForExit(process, seconds: 60) else {
                process.terminate()
                throw Failure(description: "openssl did not finish within 60 s")
            }
            // Reading the status of a process Foundation has not finished reaping traps (seen
            // once under load): wait for its own bookkeeping too, which the exit bounds.
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
