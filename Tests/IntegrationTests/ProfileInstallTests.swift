import Foundation
import Testing

@Suite("Configuration profiles through netextd", .enabled(if: isRoot, "needs root: starts netextd"))
struct ProfileInstallTests {
    let profile = fixturesDirectory + "/profiles/enterprise-vpn.mobileconfig"

    @Test("install, list, start with the profile's password, reinstall, remove as a unit")
    func installAndRemove() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()

        let installed = try await daemon.cli(["profile", "install", profile])
        #expect(installed.status == 0, "\(installed)")
        #expect(installed.stdout.contains("installed profile com.example.corp.remote-access (Example Corp Remote Access): 3 configuration(s)"))
        #expect(installed.stdout.contains("skipped com.example.corp.wifi (com.apple.wifi.managed)"))

        let list = try await daemon.cli(["list"])
        for name in ["Example Corp Tunnel", "Example Corp Per-App", "Example Corp IKEv2"] {
            #expect(list.stdout.contains(name), "\(list.stdout)")
        }
        let shown = try await daemon.cli(["show", "Example Corp Tunnel"])
        #expect(shown.stdout.contains("password:    stored"))
        #expect(shown.stdout.contains("on demand:   enabled, 5 rule(s)"))
        #expect(shown.stdout.contains("evaluateConnection, interface any, connectIfNeeded for [intranet.example.test], neverConnect for [www.example.test]"))
        #expect(!shown.stdout.contains("correct horse"), "the password never appears")
        #expect(!daemon.log().contains("correct horse"), "nor in the log")

        // Only the first enterprise VPN of the profile is enabled.
        let json = try await daemon.cli(["list", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let enabled = items.compactMap { $0["configuration"] as? [String: Any] }.filter { $0["isEnabled"] as? Bool == true }.compactMap { $0["localizedDescription"] as? String }
        #expect(Set(enabled) == ["Example Corp Tunnel", "Example Corp IKEv2"])

        // The stored password reaches the provider: the test provider demands it.
        let secrets = try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory + "/secrets")
        #expect(secrets.count == 3, "AuthPassword, IKEv2 AuthPassword and SharedSecret: \(secrets)")
        for secret in secrets {
            let mode = try FileManager.default.attributesOfItem(atPath: daemon.stateDirectory + "/secrets/" + secret)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
        let started = try await daemon.cli(["start", "Example Corp Tunnel"])
        #expect(started.status == 0, "\(started)\n\(daemon.log())")
        #expect(try await daemon.cli(["stop", "Example Corp Tunnel"]).status == 0)
        // A password given at start replaces the stored one for that start only.
        let wrong = try await daemon.cli(["start", "Example Corp Tunnel", "--password-stdin"], stdin: "wrong password\n")
        #expect(wrong.status == 5, "\(wrong)")
        #expect(wrong.stderr.contains("authentication failed"))
        #expect(!daemon.log().contains("wrong password"))

        // The personal IKEv2 VPN's settings arrive whole (starting it would look up its server's
        // name outside this test's reach; scripts/e2e/personal-vpn.sh starts one in the lab).
        let ike = try await daemon.cli(["show", "Example Corp IKEv2"])
        #expect(ike.status == 0, "\(ike)")
        #expect(ike.stdout.contains("IKEv2 server: ikev2.corp.example.test"))
        #expect(ike.stdout.contains("authentication: sharedSecret + EAP-MSCHAPv2 as"))
        #expect(ike.stdout.contains("identities:  local alice@corp.example.test, remote ikev2.corp.example.test"))
        #expect(!ike.stdout.contains("s3cr3t-psk"))

        // Reinstalling replaces in place: same ids, no duplicates, secrets not leaked.
        #expect(try await daemon.cli(["profile", "install", profile]).status == 0)
        let afterReinstall = try #require(try JSONSerialization.jsonObject(with: Data(try await daemon.cli(["list", "--json"]).stdout.utf8)) as? [[String: Any]])
        #expect(afterReinstall.count == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory + "/secrets").count == 3)

        let profiles = try await daemon.cli(["profile", "list"])
        #expect(profiles.stdout.contains("com.example.corp.remote-access"))
        let removed = try await daemon.cli(["profile", "remove", "com.example.corp.remote-access"])
        #expect(removed.status == 0)
        #expect(removed.stdout.contains("removed profile com.example.corp.remote-access and 3 configuration(s)"))
        #expect(try await daemon.cli(["list"]).stdout.contains("No configurations"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.stateDirectory + "/secrets").isEmpty)
        let again = try await daemon.cli(["profile", "remove", "com.example.corp.remote-access"])
        #expect(again.status == 8)
    }

    @Test("bad profiles are refused with exit 3 and the key at fault", arguments: [
        ("malformed.mobileconfig", "not a property list"),
        ("wrong-type.mobileconfig", "key 'VPN.RemoteAddress': expected a string, found integer"),
        ("unknown-vpntype.mobileconfig", "key 'VPNType': unknown VPNType 'L2TP'"),
        ("signed.mobileconfig", "signed profiles are not supported yet"),
    ])
    func refused(file: String, message: String) async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let result = try await daemon.cli(["profile", "install", fixturesDirectory + "/profiles/" + file])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains(message), "\(result)")
        #expect(try await daemon.cli(["list"]).stdout.contains("No configurations"))
    }

    @Test("a second personal VPN for the same app is refused")
    func duplicatePersonalVPN() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        #expect(try await daemon.cli(["profile", "install", profile]).status == 0)
        let result = try await daemon.cli(["profile", "install", fixturesDirectory + "/profiles/personal-vpn.mobileconfig"])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains("already has a personal VPN configuration ('Example Corp IKEv2')"), "\(result)")
        // Another app may have its own.
        let other = try await daemon.cli(["profile", "install", "--app", "com.example.other", fixturesDirectory + "/profiles/personal-vpn.mobileconfig"])
        #expect(other.status == 0, "\(other)")
    }

    @Test("a profile's PKCS#12 identity becomes a PEM file of netextd's secret store (mode 600) that the DNS settings and the relay name; a wrong password is refused and nothing kept; removal takes the files")
    func identities() async throws {
        let daemon = try DaemonHarness()
        defer { daemon.tearDown() }
        try await daemon.start()
        let secretsDirectory = daemon.stateDirectory + "/secrets"
        // A wrong password first: refused, naming the payload, nothing stored.
        let good = try String(contentsOfFile: fixturesDirectory + "/profiles/identities.mobileconfig", encoding: .utf8)
        let wrong = daemon.stateDirectory + "/wrong-password.mobileconfig"
        try good.replacingOccurrences(of: "<string>lab-p12</string>", with: "<string>not-it</string>").write(toFile: wrong, atomically: true, encoding: .utf8)
        let refused = try await daemon.cli(["profile", "install", wrong])
        #expect(refused.status != 0 && refused.stderr.contains("is not a PKCS#12 file NetExt can open with its Password"), "\(refused)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: secretsDirectory)) ?? []).isEmpty, "nothing kept")

        let installed = try await daemon.cli(["profile", "install", fixturesDirectory + "/profiles/identities.mobileconfig"])
        #expect(installed.status == 0, "\(installed)")
        #expect(installed.stdout.contains("skipped com.example.identities.unused (com.apple.security.pkcs12)"), "\(installed)")
        let json = try await daemon.cli(["list", "--json"])
        let items = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let configurations = items.compactMap { $0["configuration"] as? [String: Any] }
        func settings(_ name: String) -> [String: Any]? {
            (configurations.first { $0["localizedDescription"] as? String == name }?["protocolConfiguration"] as? [String: Any])?["settings"] as? [String: Any]
        }
        let dnsIdentity = try #require(settings("Lab DoT")?["identityReference"] as? String, "\(json.stdout)")
        let relayIdentity = try #require((settings("Lab relay")?["relays"] as? [[String: Any]])?.first?["identityReference"] as? String, "\(json.stdout)")
        let certificate = try String(contentsOfFile: fixturesDirectory + "/profiles/identities-laptop.crt", encoding: .utf8)
        for path in [dnsIdentity, relayIdentity] {
            #expect(path.hasPrefix(secretsDirectory + "/secret-"), "\(path)")
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(path): \(String(mode ?? 0, radix: 8))")
            let pem = try String(contentsOfFile: path, encoding: .utf8)
            // The certificate as OpenSSL wrote it, then the key in its EC form (RFC 7468 §13).
            #expect(pem.hasPrefix(certificate) && pem.contains("-----BEGIN EC PRIVATE KEY-----"), "\(pem.prefix(80))")
        }
        #expect(dnsIdentity != relayIdentity, "one file for each configuration")
        #expect(!daemon.log().contains("lab-p12"), "the payload's password is not logged")

        let removed = try await daemon.cli(["profile", "remove", "com.example.identities"])
        #expect(removed.status == 0, "\(removed)")
        #expect(!FileManager.default.fileExists(atPath: dnsIdentity) && !FileManager.default.fileExists(atPath: relayIdentity), "the identities went with their configurations")
    }
}
