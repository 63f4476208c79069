import Foundation
import Testing
@testable import EncryptedDNS

/// The client identity file of DoT/DoH settings: a certificate and key read into the TLS
/// configuration, refused — saying why — when others may read it or a part is missing.
@Suite("Encrypted DNS: the client identity file")
struct ClientIdentityTests {
    /// A directory with `identity.pem` (a self-signed certificate and its key) and `cert.pem`
    /// (the certificate alone), made with openssl.
    static func makeFiles() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-identity-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", """
            set -e; cd '\(directory.path)'; umask 077
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out cert.pem -days 2 -subj /CN=laptop.test 2>/dev/null
            cat cert.pem key.pem > identity.pem
            """]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return directory
    }

    func trust(_ path: String) -> DNSServerTrust {
        var trust = DNSServerTrust.system
        trust.clientIdentityFile = path
        return trust
    }

    @Test("a certificate and key readable by their owner alone go into the TLS configuration; each fault is named")
    func identity() throws {
        let directory = try Self.makeFiles()
        defer { try? FileManager.default.removeItem(at: directory) }
        let identity = directory.appendingPathComponent("identity.pem").path
        let configuration = try trust(identity).configuration()
        #expect(configuration.certificateChain.count == 1 && configuration.privateKey != nil)

        chmod(identity, 0o640)
        #expect(throws: EncryptedDNSError.self) { _ = try trust(identity).configuration() }
        do { _ = try trust(identity).configuration() } catch {
            #expect("\(error)".contains("its group or others may read it (mode 640)"), "\(error)")
        }
        let certificateOnly = directory.appendingPathComponent("cert.pem").path
        do { _ = try trust(certificateOnly).configuration(); Issue.record("a file without a key was taken") } catch {
            #expect("\(error)".contains("its private key cannot be read"), "\(error)")
        }
        do { _ = try trust(directory.appendingPathComponent("absent.pem").path).configuration(); Issue.record("an absent file was taken") } catch {
            #expect("\(error)".contains("No such file"), "\(error)")
        }
    }
}
