import HTTPCapsules
import NetExtTestSupport
import Testing

@Suite("connect-udp target paths (RFC 9298 §2 and §3)")
struct ConnectUDPTargetTests {
    @Test("RFC 9298 §3's examples: an IPv4 target and an IPv6 one with its colons percent-encoded, both ways")
    func rfcExamples() throws {
        let v4 = try ConnectUDPTarget(path: "/.well-known/masque/udp/192.0.2.6/443/")
        #expect(v4.host == "192.0.2.6" && v4.port == 443 && v4.hostKind == .ipv4)
        #expect(v4.path == "/.well-known/masque/udp/192.0.2.6/443/")
        let v6 = try ConnectUDPTarget(path: "/.well-known/masque/udp/2001%3Adb8%3A%3A42/443/")
        #expect(v6.host == "2001:db8::42" && v6.hostKind == .ipv6)
        #expect(v6.path == "/.well-known/masque/udp/2001%3Adb8%3A%3A42/443/")
        #expect(v6.description == "[2001:db8::42]:443")
        // Lower-case escapes too, and a name (lower-cased).
        #expect(try ConnectUDPTarget(path: "/.well-known/masque/udp/2001%3adb8%3a%3a42/53/").host == "2001:db8::42")
        let name = try ConnectUDPTarget(path: "/.well-known/masque/udp/Echo.Office.TEST/7/?x=1")
        #expect(name.host == "echo.office.test" && name.hostKind == .name && name.port == 7)
        #expect(try ConnectUDPTarget(host: "[::1]", port: 53).path == "/.well-known/masque/udp/%3A%3A1/53/")
    }

    @Test("paths that are not a connect-udp target are refused, each with a reason that names the part at fault",
          arguments: [
            ("/.well-known/masque/udp/192.0.2.6/443", "not a connect-udp path"),
            ("/.well-known/masque/udp/192.0.2.6/443/extra/", "not a connect-udp path"),
            ("/.well-known/masque/ip/192.0.2.6/443/", "not a connect-udp path"),
            ("/.well-known/masque/udp//443/", "it is empty"),
            ("/.well-known/masque/udp/192.0.2.6/0/", "target port \"0\""),
            ("/.well-known/masque/udp/192.0.2.6/65536/", "target port \"65536\""),
            ("/.well-known/masque/udp/192.0.2.6/+53/", "target port \"+53\""),
            ("/.well-known/masque/udp/2001:zz::1/53/", "not an IPv6 address"),
            ("/.well-known/masque/udp/%zz/53/", "two hex digits"),
            ("/.well-known/masque/udp/a%2Fb/53/", "letters, digits and inner hyphens"),
            ("/.well-known/masque/udp/..%2F..%2Fetc/53/", "1 to 63 characters"),
            ("/.well-known/masque/udp/-bad.test/53/", "letters, digits and inner hyphens"),
            ("/.well-known/masque/udp/999.1.1.1/53/", "all digits but not an IPv4 address"),
            ("/.well-known/masque/udp/%C3%28/53/", "not UTF-8"),
          ])
    func refused(path: String, reason: String) {
        do {
            let target = try ConnectUDPTarget(path: path)
            Issue.record("\(path) was accepted as \(target)")
        } catch {
            #expect(error.description.contains(reason), "\(path): \(error)")
        }
    }

    @Test("random paths never crash the parser, and every target it accepts writes back to a path that reads the same", arguments: [UInt64(31), 32])
    func fuzz(seed: UInt64) throws {
        var random = SplitMix64(state: seed &* 0x9E37_79B9_7F4A_7C15)
        let alphabet = Array("abz09-.:%3A/[]?#é ".unicodeScalars)
        var accepted = 0
        for _ in 0..<5_000 {
            var host = ""
            for _ in 0..<random.below(24) { host.unicodeScalars.append(alphabet[random.below(alphabet.count)]) }
            let port = ["53", "0", "65535", "70000", "", "x"][random.below(6)]
            let path = ConnectUDPTarget.pathPrefix + host + "/" + port + "/"
            guard let target = try? ConnectUDPTarget(path: path) else { continue }
            accepted += 1
            #expect(try ConnectUDPTarget(path: target.path) == target, "\(path)")
        }
        #expect(accepted > 0)
    }
}
