import HTTPCapsules
import NetExtCore
import NetExtTestSupport
import Testing

@Suite("connect-ip scope paths (RFC 9484 §3 and §4.6)")
struct ConnectIPScopeTests {
    @Test("RFC 9484 §3's template filled in: any destination, an address, a prefix and a name, with and without a protocol, both ways")
    func examples() throws {
        let any = try ConnectIPScope(path: "/.well-known/masque/ip/*/*/")
        #expect(any.target == .any && any.ipProtocol == nil && any.path == "/.well-known/masque/ip/*/*/")
        let address = try ConnectIPScope(path: "/.well-known/masque/ip/192.0.2.42/17/")
        #expect(address.target == .prefix(try IPPrefix("192.0.2.42/32")) && address.ipProtocol == 17)
        #expect(address.path == "/.well-known/masque/ip/192.0.2.42/17/")
        let prefix = try ConnectIPScope(path: "/.well-known/masque/ip/2001%3Adb8%3A%3A%2F32/*/")
        #expect(prefix.target == .prefix(try IPPrefix("2001:db8::/32")) && prefix.ipProtocol == nil)
        #expect(prefix.path == "/.well-known/masque/ip/2001%3Adb8%3A%3A%2F32/*/")
        let v4Prefix = try ConnectIPScope(path: "/.well-known/masque/ip/10.20.0.0%2f24/6/?q")
        #expect(v4Prefix.target == .prefix(try IPPrefix("10.20.0.0/24")) && v4Prefix.ipProtocol == 6)
        let name = try ConnectIPScope(path: "/.well-known/masque/ip/Intranet.Example/0/")
        #expect(name.target == .name("intranet.example") && name.ipProtocol == 0)
        #expect(name.description == "intranet.example, IP protocol 0")
    }

    @Test("a scope admits a destination in its prefix and of its protocol only; a name admits no address")
    func admits() throws {
        let scope = ConnectIPScope(target: .prefix(try IPPrefix("10.20.0.0/24")), ipProtocol: 17)
        #expect(scope.admits(destination: [10, 20, 0, 5], ipProtocol: 17))
        #expect(!scope.admits(destination: [10, 20, 1, 5], ipProtocol: 17))
        #expect(!scope.admits(destination: [10, 20, 0, 5], ipProtocol: 6))
        #expect(!scope.admits(destination: [UInt8](repeating: 0, count: 16), ipProtocol: 17))
        #expect(ConnectIPScope().admits(destination: [192, 0, 2, 1], ipProtocol: 1))
        #expect(!ConnectIPScope(target: .name("a.example")).admits(destination: [192, 0, 2, 1], ipProtocol: 1))
    }

    @Test("paths that are not a connect-ip scope are refused, each with a reason that names the part at fault",
          arguments: [
            ("/.well-known/masque/ip/*/*", "not a connect-ip path"),
            ("/.well-known/masque/udp/*/*/", "not a connect-ip path"),
            ("/.well-known/masque/ip/*/*/extra/", "not a connect-ip path"),
            ("/.well-known/masque/ip//*/", "it is empty"),
            ("/.well-known/masque/ip/*/256/", "IP protocol \"256\""),
            ("/.well-known/masque/ip/*/-1/", "IP protocol \"-1\""),
            ("/.well-known/masque/ip/*/tcp/", "IP protocol \"tcp\""),
            ("/.well-known/masque/ip/*/0017/", "IP protocol \"0017\""),
            ("/.well-known/masque/ip/10.20.0.1%2F24/*/", "host bits zero"),
            ("/.well-known/masque/ip/10.20.0.0%2F33/*/", "host bits zero"),
            ("/.well-known/masque/ip/2001:zz::/*/", "not an IPv6 address"),
            ("/.well-known/masque/ip/%zz/*/", "two hex digits"),
            ("/.well-known/masque/ip/%C3%28/*/", "not UTF-8"),
            ("/.well-known/masque/ip/-bad.example/*/", "neither *, an IP address or prefix, nor a DNS name"),
          ])
    func refused(path: String, reason: String) {
        do {
            let scope = try ConnectIPScope(path: path)
            Issue.record("\(path) was accepted as \(scope)")
        } catch {
            #expect(error.description.contains(reason), "\(path): \(error)")
        }
    }

    @Test("random paths never crash the parser, and every scope it accepts writes back to a path that reads the same", arguments: [UInt64(41), 42])
    func fuzz(seed: UInt64) throws {
        var random = SplitMix64(state: seed &* 0x9E37_79B9_7F4A_7C15)
        let alphabet = Array("abz019-.:*%2F3A/[]?é ".unicodeScalars)
        var accepted = 0
        for _ in 0..<5_000 {
            var target = ""
            for _ in 0..<random.below(24) { target.unicodeScalars.append(alphabet[random.below(alphabet.count)]) }
            if random.below(4) == 0 { target = ["10.0.0.0%2F8", "fd00%3A%3A%2F8", "*", "192.0.2.1"][random.below(4)] }
            let ipProtocol = ["*", "0", "6", "17", "255", "256", "", "x"][random.below(8)]
            let path = ConnectIPScope.pathPrefix + target + "/" + ipProtocol + "/"
            guard let scope = try? ConnectIPScope(path: path) else { continue }
            accepted += 1
            #expect(try ConnectIPScope(path: scope.path) == scope, "\(path)")
        }
        #expect(accepted > 100)
    }
}
