import Foundation
import Testing

@testable import NetExtHTTP

@Suite("What ATS reads in a certificate")
struct CertificateFactsTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/certificates")

    static func der(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: directory.appendingPathComponent("\(name).der"))) }
    static func pin(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("\(name).spki-sha256"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("key kind and size, signature hash, SPKI pin (as openssl computes it), names, dates", arguments: [
        ("rsa2048-sha256", CertificateFacts.KeyKind.rsa(bits: 2048), "ecdsa-with-SHA256", "SHA-256"),
        ("rsa1024-sha256", .rsa(bits: 1024), "ecdsa-with-SHA256", "SHA-256"),
        ("p256-sha1", .ellipticCurve(name: "P-256", bits: 256), "ecdsa-with-SHA1", "SHA-1"),
        ("p384-sha384", .ellipticCurve(name: "P-384", bits: 384), "ecdsa-with-SHA384", "SHA-384"),
        ("ed25519", .ed25519, "ecdsa-with-SHA256", "SHA-256"),
    ])
    func facts(name: String, key: CertificateFacts.KeyKind, algorithm: String, hash: String) throws {
        let facts = try CertificateFacts(der: try Self.der(name))
        #expect(facts.key == key)
        #expect(facts.signatureAlgorithm == algorithm && facts.signatureHash == hash)
        #expect(facts.spkiSHA256Base64 == (try Self.pin(name)))
        #expect(facts.commonName == "\(name).example" && facts.issuerCommonName == "Fixture CA")
        #expect(!facts.hasEmbeddedSCTs)
        let days = facts.notAfter.timeIntervalSince(facts.notBefore) / 86_400
        #expect(abs(days - 3650) < 1)
    }

    @Test("a certificate without extensions reads")
    func noExtensions() throws {
        let facts = try CertificateFacts(der: try Self.der("rsa2048-sha1-by-ec"))
        #expect(facts.key == .rsa(bits: 2048) && facts.signatureHash == "SHA-1")
    }

    @Test("significant bits of a DER integer")
    func bits() {
        #expect(CertificateFacts.significantBits([0x00, 0x80] + [UInt8](repeating: 0xFF, count: 255)) == 2048)
        #expect(CertificateFacts.significantBits([0x01, 0x00]) == 9)
        #expect(CertificateFacts.significantBits([0x00]) == 0)
    }

    @Test("every truncation and 3000 corruptions are read or refused with a sentence; nothing traps")
    func fuzz() throws {
        let original = try Self.der("rsa2048-sha256")
        for length in 0..<original.count {
            #expect(throws: CertificateFactsError.self) { try CertificateFacts(der: Array(original.prefix(length))) }
        }
        var generator = SeededGenerator(seed: 0xA75)
        var refused = 0
        for _ in 0..<3000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            do { _ = try CertificateFacts(der: bytes) } catch {
                refused += 1
                #expect(!error.description.isEmpty)
            }
        }
        #expect(refused > 0)
    }
}

@Suite("ATS's certificate rules")
struct ATSCertificateCheckTests {
    func facts(_ name: String) throws -> CertificateFacts { try CertificateFacts(der: try CertificateFactsTests.der(name)) }

    @Test("strong keys signed with SHA-2 pass; a 1024-bit key and a SHA-1 signature are refused by their rules")
    func strength() throws {
        let rules = ATSPolicy.strict.requirements(for: "a.example")
        #expect(ATSCertificateCheck.refusal(try facts("rsa2048-sha256"), rules) == nil)
        #expect(ATSCertificateCheck.refusal(try facts("p384-sha384"), rules) == nil)
        #expect(ATSCertificateCheck.refusal(try facts("ed25519"), rules) == nil)
        let weak = try #require(ATSCertificateCheck.refusal(try facts("rsa1024-sha256"), rules))
        #expect(weak.rule == .keySize && weak.detail.contains("RSA 1024-bit"))
        #expect(weak.description.contains("NSExceptionDomains › a.example › NSExceptionAllowsInsecureHTTPLoads = true"))
        #expect(ATSCertificateCheck.refusal(try facts("p256-sha1"), rules)?.rule == .signatureHash)
    }

    @Test("NSExceptionAllowsInsecureHTTPLoads lifts the strength rules, not pins")
    func lifted() throws {
        var policy = ATSPolicy()
        var exception = ATSDomainException()
        exception.allowsInsecureHTTPLoads = true
        policy.exceptionDomains["a.example"] = exception
        var pinned = ATSPinnedDomain()
        pinned.leafIdentities = [try CertificateFactsTests.pin("rsa2048-sha256")]
        policy.pinnedDomains["a.example"] = pinned
        let rules = policy.requirements(for: "a.example")
        #expect(ATSCertificateCheck.refusal(try facts("rsa2048-sha256"), rules) == nil)
        #expect(ATSCertificateCheck.refusal(try facts("p256-sha1"), rules)?.rule == .pinning)
        policy.pinnedDomains = [:]
        #expect(ATSCertificateCheck.refusal(try facts("rsa1024-sha256"), policy.requirements(for: "a.example")) == nil)
    }

    @Test("transparency, when required, needs embedded SCTs; CA pins are refused as uncheckable")
    func transparencyAndCAPins() throws {
        var policy = ATSPolicy()
        var exception = ATSDomainException()
        exception.requiresCertificateTransparency = true
        policy.exceptionDomains["a.example"] = exception
        #expect(ATSCertificateCheck.refusal(try facts("rsa2048-sha256"), policy.requirements(for: "a.example"))?.rule == .certificateTransparency)
        var pinned = ATSPinnedDomain()
        pinned.caIdentities = ["x"]
        policy.pinnedDomains["b.example"] = pinned
        let refusal = ATSCertificateCheck.refusal(try facts("rsa2048-sha256"), policy.requirements(for: "b.example"))
        #expect(refusal?.rule == .pinning && refusal?.detail.contains("NSPinnedCAIdentities cannot be checked") == true)
    }

    @Test("an expired certificate is explained with its date")
    func expiredExplanation() throws {
        var facts = try facts("rsa2048-sha256")
        facts.notAfter = Date(timeIntervalSince1970: 1_609_459_200)
        #expect(CertificateTrustProbe.describe(facts, host: "a.example") == "the server's certificate expired on 2021-01-01T00:00:00Z")
        facts.notAfter = Date.distantFuture
        facts.notBefore = Date(timeIntervalSinceNow: 86_400 * 30)
        #expect(CertificateTrustProbe.describe(facts, host: "a.example").hasPrefix("the server's certificate is not valid until"))
        facts.notBefore = Date.distantPast
        #expect(CertificateTrustProbe.describe(facts, host: "a.example").contains("signed by 'Fixture CA', whom this session does not trust"))
    }
}

@Suite("ATS's handshake rules as TLS settings")
struct ATSTLSConfigurationTests {
    @Test("forward secrecy keeps RSA key exchange out; a lower minimum adds CBC suites")
    func suites() {
        var rules = ATSPolicy.strict.requirements(for: "a.example")
        #expect(ATSTLSConfiguration.suites(for: rules).allSatisfy { $0.hasPrefix("ECDHE-") && !$0.hasSuffix("-SHA") })
        let configuration = ATSTLSConfiguration.make(rules, trust: .system, applicationProtocols: ["h2", "http/1.1"])
        #expect(configuration.minimumTLSVersion == .tlsv12 && configuration.applicationProtocols == ["h2", "http/1.1"])
        rules.requiresForwardSecrecy = false
        #expect(ATSTLSConfiguration.suites(for: rules).contains("AES128-GCM-SHA256"))
        rules.minimumTLSVersion = .tls10
        #expect(ATSTLSConfiguration.suites(for: rules).contains("AES128-SHA"))
        rules.requiresForwardSecrecy = true
        #expect(!ATSTLSConfiguration.suites(for: rules).contains("AES128-SHA") && ATSTLSConfiguration.suites(for: rules).contains("ECDHE-RSA-AES128-SHA"))
        #expect(ATSTLSConfiguration.make(rules, trust: .system, applicationProtocols: []).minimumTLSVersion == .tlsv1)
    }
}
