import Foundation
import NetExtCore
import NetExtTestSupport
import Testing

/// RFC 8908 API answers, RFC 8910 announcements in DHCPv4 and Router Advertisements, the
/// connectivity check's answers: examples from the RFCs, every refusal naming its fault, and
/// random input that never crashes a parser.
@Suite("Captive portals: announcements, API answers, connectivity checks")
struct CaptivePortalParsingTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    // MARK: RFC 8908 §5

    @Test("the API examples of RFC 8908 §5: captive with a portal; a session running with seconds left")
    func apiExamples() throws {
        let captive = try CaptivePortalAPIStatus.parse(Self.bytes(#"{"captive": true, "user-portal-url": "https://example.org/portal.html"}"#))
        #expect(captive == CaptivePortalAPIStatus(isCaptive: true, userPortalURL: URL(string: "https://example.org/portal.html")))
        let running = try CaptivePortalAPIStatus.parse(Self.bytes("""
            {"captive": false, "user-portal-url": "https://example.org/portal.html",
             "venue-info-url": "https://flight.example.com/entertainment", "seconds-remaining": 326, "can-extend-session": true}
            """))
        #expect(!running.isCaptive && running.secondsRemaining == 326 && running.canExtendSession)
        #expect(running.venueInfoURL == URL(string: "https://flight.example.com/entertainment"))
        #expect(running.bytesRemaining == nil)
        let extra = try CaptivePortalAPIStatus.parse(Self.bytes(#"{"captive": false, "bytes-remaining": 65536, "x-vendor": [1, {"a": null}]}"#))
        #expect(extra.bytesRemaining == 65536, "unknown keys are ignored")
    }

    @Test("an API answer is refused with the key at fault", arguments: [
        (#"{"user-portal-url": "https://p.test/"}"#, #"no "captive" key"#),
        (#"{"captive": 1}"#, #""captive" in the captive portal API's answer must be true or false"#),
        (#"{"captive": "true"}"#, #""captive" in the captive portal API's answer must be true or false"#),
        (#"{"captive": true, "seconds-remaining": -1}"#, #""seconds-remaining" in the captive portal API's answer must be a whole number"#),
        (#"{"captive": true, "seconds-remaining": 1.5}"#, #""seconds-remaining" in the captive portal API's answer must be a whole number"#),
        (#"{"captive": true, "bytes-remaining": "9"}"#, #""bytes-remaining" in the captive portal API's answer must be a number"#),
        (#"{"captive": true, "user-portal-url": "http://p.test/login"}"#, #""user-portal-url" in the captive portal API's answer must be an https URL"#),
        (#"{"captive": true, "user-portal-url": "/login"}"#, "is not an absolute URL with a host"),
        (#"{"captive": true, "venue-info-url": "ftp://p.test/"}"#, "must be an http or https URL"),
        (#"{"captive": true, "can-extend-session": null}"#, #""can-extend-session" in the captive portal API's answer must be true or false"#),
        (#"[true]"#, "is not a JSON object"),
        (#"{"captive": tru"#, "is not JSON"),
    ])
    func apiRefusals(body: String, fault: String) {
        #expect(throws: CaptivePortalError.self) { try CaptivePortalAPIStatus.parse(Self.bytes(body)) }
        do {
            _ = try CaptivePortalAPIStatus.parse(Self.bytes(body))
        } catch {
            #expect(error.description.contains(fault), "\(error.description)")
        }
    }

    @Test("an API answer larger than 64 KiB is not read")
    func apiTooLarge() {
        let body = Self.bytes(#"{"captive": true, "pad": ""#) + [UInt8](repeating: 0x61, count: 70_000) + Self.bytes(#""}"#)
        #expect(throws: CaptivePortalError("the captive portal API's answer is \(body.count) bytes; at most 65536 are read")) { try CaptivePortalAPIStatus.parse(body) }
    }

    // MARK: RFC 8910 in DHCPv4

    /// A DHCPACK (RFC 2131 §2) with the given options area, `file` and `sname` fields.
    static func dhcpReply(options: [UInt8], file: [UInt8] = [], sname: [UInt8] = [], transactionID: UInt32 = 0x0102_0304) -> [UInt8] {
        var message = [UInt8](repeating: 0, count: 236)
        message[0] = 2
        message[4...7] = [1, 2, 3, 4]
        _ = transactionID
        for (index, byte) in sname.prefix(64).enumerated() { message[44 + index] = byte }
        for (index, byte) in file.prefix(128).enumerated() { message[108 + index] = byte }
        return message + [99, 130, 83, 99] + options
    }

    static func option(_ code: UInt8, _ value: [UInt8]) -> [UInt8] { [code, UInt8(value.count)] + value }

    @Test("option 114 in a DHCPACK: the API's URI; the IANA URN for no portal, in any case; none")
    func dhcpOption114() throws {
        let uri = Self.bytes("https://portal.example/capport")
        let reply = try DHCPv4Message.parse(Self.dhcpReply(options: Self.option(53, [5]) + Self.option(114, uri) + [255]))
        #expect(reply.messageType == .ack && reply.operation == 2 && reply.transactionID == 0x0102_0304)
        #expect(try CaptivePortalAnnouncement.from(reply) == .api(URL(string: "https://portal.example/capport")!))
        let open = try DHCPv4Message.parse(Self.dhcpReply(options: [0, 0] + Self.option(114, Self.bytes("URN:IETF:params:capport:unrestricted")) + [255]))
        #expect(try CaptivePortalAnnouncement.from(open) == .unrestricted)
        let none = try DHCPv4Message.parse(Self.dhcpReply(options: Self.option(53, [5]) + [255]))
        #expect(try CaptivePortalAnnouncement.from(none) == nil)
    }

    @Test("a long option split in two (RFC 3396) and options continued in file and sname (overload, RFC 2132 §9.3) are joined in order")
    func dhcpOverloadAndConcatenation() throws {
        let uri = Self.bytes("https://a-rather-long-portal-name.example/captive-portal/api/v1")
        let first = Array(uri.prefix(20))
        let second = Array(uri.dropFirst(20).prefix(20))
        let third = Array(uri.dropFirst(40))
        let message = Self.dhcpReply(
            options: Self.option(52, [3]) + Self.option(114, first) + [255], file: Self.option(114, second) + [255], sname: Self.option(114, third) + [255])
        let parsed = try DHCPv4Message.parse(message)
        #expect(parsed.options[114] == uri)
        #expect(try CaptivePortalAnnouncement.from(parsed) == .api(URL(string: String(decoding: uri, as: UTF8.self))!))
    }

    @Test("a DHCP message is refused with the offset at fault", arguments: [
        ([UInt8](repeating: 0, count: 100), "at least 240 are needed"),
        ([UInt8](repeating: 0, count: 300), "no magic cookie at offset 236"),
    ])
    func dhcpRefusals(message: [UInt8], fault: String) {
        do {
            _ = try DHCPv4Message.parse(message)
            Issue.record("parsed")
        } catch {
            #expect(error.description.contains(fault), "\(error.description)")
        }
    }

    @Test("a truncated option, a missing length, a bad overload value: each named with its offset")
    func dhcpTruncated() {
        let cases: [([UInt8], String)] = [
            (Self.dhcpReply(options: [114, 40] + Self.bytes("https://x")), "option 114 at offset 240 runs past the end of its field (40 bytes)"),
            (Self.dhcpReply(options: Self.option(53, [5]) + [114]), "option 114 at offset 243 has no length byte"),
            (Self.dhcpReply(options: Self.option(52, [7]) + [255]), "option 52 (overload) must be one byte of 1, 2 or 3"),
        ]
        for (message, fault) in cases {
            do {
                _ = try DHCPv4Message.parse(message)
                Issue.record("parsed: \(fault)")
            } catch {
                #expect(error.description.contains(fault), "\(error.description)")
            }
        }
    }

    @Test("announced URIs: printable ASCII only (the byte's offset named), https only, a host, not empty")
    func announcedURIRefusals() {
        let cases: [([UInt8], String)] = [
            (Self.bytes("https://p.test/\u{0}x"), "holds byte 0x0 at offset 15"),
            (Self.bytes("https://p.test/ x"), "holds byte 0x20 at offset 15"),
            (Self.bytes("http://p.test/capport"), "must be an https URL"),
            (Self.bytes("https:///capport"), "is not an absolute URL with a host"),
            ([], "is empty"),
        ]
        for (uri, fault) in cases {
            do {
                _ = try CaptivePortalAnnouncement.parse(uri: uri, source: "DHCP option 114 (captive portal)")
                Issue.record("accepted \(uri)")
            } catch {
                #expect(error.description.contains(fault), "\(error.description)")
            }
        }
    }

    @Test("a DHCPINFORM (RFC 2131 §4.4.3): BOOTREQUEST, ciaddr and chaddr set, type 8, the options asked for; it parses back")
    func informMessage() throws {
        let message = DHCPv4Message.inform(transactionID: 0xdead_beef, clientAddress: [198, 51, 100, 2], hardwareAddress: [2, 0, 0, 0, 0, 1], requesting: [1, 3, 114])
        #expect(message[0] == 1 && message[1] == 1 && message[2] == 6)
        #expect(Array(message[12..<16]) == [198, 51, 100, 2])
        #expect(Array(message[28..<34]) == [2, 0, 0, 0, 0, 1])
        #expect(Array(message[10..<12]) == [0, 0], "broadcast flag clear: the answer comes to ciaddr")
        let parsed = try DHCPv4Message.parse(message)
        #expect(parsed.transactionID == 0xdead_beef && parsed.operation == 1)
        #expect(parsed.messageType == .inform && parsed.options[55] == [1, 3, 114])
    }

    // MARK: RFC 8910 §2.3 in Router Advertisements

    static func routerAdvertisement(options: [UInt8]) -> [UInt8] {
        [134, 0, 0, 0, 64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0] + options
    }

    @Test("RA option 37: the URI padded with NULs to 8-byte units; other options passed over")
    func routerAdvertisementOption() throws {
        let uri = Self.bytes("https://portal.example/api")  // 26 bytes + 2 header = 28 → 32 (4 units)
        let option37: [UInt8] = [37, 4] + uri + [0, 0, 0, 0]
        let mtu: [UInt8] = [5, 1, 0, 0, 0, 0, 0x05, 0xdc]
        #expect(try CaptivePortalAnnouncement.fromRouterAdvertisement(Self.routerAdvertisement(options: mtu + option37)) == .api(URL(string: "https://portal.example/api")!))
        #expect(try CaptivePortalAnnouncement.fromRouterAdvertisement(Self.routerAdvertisement(options: mtu)) == nil)
        #expect(throws: CaptivePortalError.self) { try CaptivePortalAnnouncement.fromRouterAdvertisement(Self.routerAdvertisement(options: [5, 0, 0, 0, 0, 0, 0, 0])) }
        #expect(throws: CaptivePortalError.self) { try CaptivePortalAnnouncement.fromRouterAdvertisement(Self.routerAdvertisement(options: [37, 9] + uri)) }
        #expect(throws: CaptivePortalError.self) { try CaptivePortalAnnouncement.fromRouterAdvertisement([133, 0, 0, 0]) }
    }

    @Test("Router Solicitation bytes, and RFC 4861 §6.1.2's checks on an advertisement before its options are read")
    func routerDiscovery() {
        #expect(RouterDiscovery.solicitation(hardwareAddress: [2, 0, 0, 0, 0, 7]) == [133, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0, 7])
        #expect(RouterDiscovery.solicitation(hardwareAddress: []) == [133, 0, 0, 0, 0, 0, 0, 0], "no link-layer address option without one")
        let linkLocal: [UInt8] = [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]
        let global: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1]
        let advertisement = Self.routerAdvertisement(options: [])
        #expect(RouterDiscovery.advertisementProblem(advertisement, source: linkLocal, hopLimit: 255) == nil)
        #expect(RouterDiscovery.advertisementProblem(advertisement, source: linkLocal, hopLimit: 64)?.contains("hop limit 64, not 255") == true)
        #expect(RouterDiscovery.advertisementProblem(advertisement, source: linkLocal, hopLimit: nil) != nil)
        #expect(RouterDiscovery.advertisementProblem(advertisement, source: global, hopLimit: 255)?.contains("not link-local") == true)
        #expect(RouterDiscovery.advertisementProblem(advertisement, source: [], hopLimit: 255) != nil)
        var coded = advertisement
        coded[1] = 1
        #expect(RouterDiscovery.advertisementProblem(coded, source: linkLocal, hopLimit: 255)?.contains("code 1") == true)
        #expect(RouterDiscovery.advertisementProblem(Array(advertisement.prefix(15)), source: linkLocal, hopLimit: 255) != nil)
    }

    // MARK: The connectivity check

    @Test("answers: Content-Length, chunked, to the close; Location kept")
    func probeResponses() throws {
        let sized = try ProbeResponse.parse(Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello world"))
        #expect(sized == ProbeResponse(status: 200, body: Self.bytes("hello")))
        let chunked = try ProbeResponse.parse(Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"))
        #expect(chunked.body == Self.bytes("hello world"))
        let redirect = try ProbeResponse.parse(Self.bytes("HTTP/1.0 302 Found\r\nlocation:  https://p.test/login \r\n\r\n"))
        #expect(redirect == ProbeResponse(status: 302, location: "https://p.test/login"))
    }

    @Test("a malformed answer is refused, named", arguments: [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "no complete header"),
        ("HTTP/2 200\r\n\r\n", "does not start with an HTTP/1 status line"),
        ("HTTP/1.1 2x0 OK\r\n\r\n", "no three-digit status code"),
        ("HTTP/1.1 200 OK\r\n: nameless\r\n\r\n", "a header line without a name at offset 17"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "Content-Length that is not a number at offset 17"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size that is not hexadecimal at offset 47"),
        // Found by the fuzz test below: Int("-5", radix: 16) is -5, and a negative length crashed.
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n", "chunk size that is not hexadecimal at offset 47"),
    ])
    func probeRefusals(answer: String, fault: String) {
        do {
            _ = try ProbeResponse.parse(Self.bytes(answer))
            Issue.record("parsed")
        } catch {
            #expect(error.description.contains(fault), "\(error.description)")
        }
    }

    @Test("verdicts: the real answer is online; a redirect (relative too), 511 or another page is a portal")
    func probeVerdicts() {
        let expecting = ConnectivityProbe(url: URL(string: "http://check.test/status.txt")!, expectedResponse: "NetExt is online")
        #expect(expecting.verdict(status: 200, location: nil, body: Self.bytes("NetExt is online\n")) == .online)
        #expect(expecting.verdict(status: 200, location: nil, body: Self.bytes("<html>Welcome to the cafe")) == .captive(redirect: nil))
        #expect(expecting.verdict(status: 302, location: "/login", body: []) == .captive(redirect: URL(string: "http://check.test/login")))
        #expect(expecting.verdict(status: 511, location: nil, body: []) == .captive(redirect: nil))
        let generate204 = ConnectivityProbe(url: URL(string: "http://check.test/generate_204")!)
        #expect(generate204.verdict(status: 204, location: nil, body: []) == .online)
        #expect(generate204.verdict(status: 200, location: nil, body: []) == .captive(redirect: nil))
    }

    @Test("the verdict: the API's word first, then the check's, then an announcement of no portal")
    func decisions() {
        let portal = URL(string: "https://p.test/login")!
        let api = CaptivePortalAPIStatus(isCaptive: true, userPortalURL: portal)
        #expect(CaptivePortalDetection.decide(announcement: nil, api: api, probe: .online) == (.captive, portal))
        #expect(CaptivePortalDetection.decide(announcement: nil, api: CaptivePortalAPIStatus(isCaptive: false), probe: .captive(redirect: nil)) == (.open, nil))
        #expect(CaptivePortalDetection.decide(announcement: nil, api: CaptivePortalAPIStatus(isCaptive: true), probe: .captive(redirect: portal)) == (.captive, portal))
        #expect(CaptivePortalDetection.decide(announcement: nil, api: nil, probe: .captive(redirect: portal)) == (.captive, portal))
        #expect(CaptivePortalDetection.decide(announcement: .unrestricted, api: nil, probe: nil) == (.open, nil))
        #expect(CaptivePortalDetection.decide(announcement: .unrestricted, api: nil, probe: .captive(redirect: nil)).0 == .captive)
        #expect(CaptivePortalDetection.decide(announcement: nil, api: nil, probe: nil) == (.unknown, nil))
    }

    // MARK: Properties

    @Test("random and mutated input never crashes a parser (20,000 cases each, seeded)")
    func fuzz() {
        var random = SplitMix64(state: 0x25_8910)
        let seeds: [[UInt8]] = [
            Self.dhcpReply(options: Self.option(52, [3]) + Self.option(114, Self.bytes("https://p.test/a")) + [255], file: Self.option(114, [0x62]) + [255]),
            Self.routerAdvertisement(options: [37, 3] + Self.bytes("https://p.test/") + [0, 0, 0, 0, 0, 0, 0]),
            Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
            Self.bytes(#"{"captive": false, "seconds-remaining": 326, "user-portal-url": "https://p.test/"}"#),
        ]
        var parsed = 0
        for round in 0..<20_000 {
            var input: [UInt8]
            if round % 4 == 0 {
                input = (0..<Int.random(in: 0...400, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                input = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...6, using: &random) where !input.isEmpty {
                    switch Int.random(in: 0...2, using: &random) {
                    case 0: input[Int.random(in: 0..<input.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                    case 1: input.removeLast(Int.random(in: 0...min(8, input.count), using: &random))
                    default: input.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...input.count, using: &random))
                    }
                }
            }
            if let message = try? DHCPv4Message.parse(input) {
                parsed += 1
                _ = try? CaptivePortalAnnouncement.from(message)
            }
            if (try? CaptivePortalAnnouncement.fromRouterAdvertisement(input)) != nil { parsed += 1 }
            if (try? ProbeResponse.parse(input)) != nil { parsed += 1 }
            if (try? CaptivePortalAPIStatus.parse(input)) != nil { parsed += 1 }
        }
        #expect(parsed > 1000, "the mutations keep enough inputs valid to reach past the first checks (\(parsed))")
    }

    @Test("random option sets survive building and parsing (codes 1–254 but 52, values up to 255 bytes)")
    func optionsRoundTrip() throws {
        var random = SplitMix64(state: 0x2131)
        for _ in 0..<500 {
            var options: [UInt8: [UInt8]] = [:]
            var area: [UInt8] = []
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                var code = UInt8.random(in: 1...254, using: &random)
                if code == 52 { code = 53 }
                let value = (0..<Int.random(in: 0...255, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                options[code, default: []] += value
                area += Self.option(code, value)
            }
            let parsed = try DHCPv4Message.parse(Self.dhcpReply(options: area + [255]))
            #expect(parsed.options == options)
        }
    }

    @Test("DHCPv6 Information-Request (RFC 8415 §18.2.6): type 11, the transaction ID, DUID-LL, the option request and elapsed time")
    func dhcpv6InformationRequest() throws {
        let request = DHCPv6Message.informationRequest(transactionID: 0x12_3456, hardwareAddress: [2, 0, 0, 0, 0, 1], requesting: [103])
        #expect(request == [11, 0x12, 0x34, 0x56, 0, 1, 0, 10, 0, 3, 0, 1, 2, 0, 0, 0, 0, 1, 0, 6, 0, 2, 0, 103, 0, 8, 0, 2, 0, 0])
        let parsed = try DHCPv6Message.parse(request)
        #expect(parsed.type == 11 && parsed.transactionID == 0x12_3456 && parsed.options[6] == [0, 103])
        #expect(DHCPv6Message.informationRequest(transactionID: 1, hardwareAddress: [], requesting: [103]).count == 4 + 6 + 6, "no client identifier without an Ethernet address")
    }

    @Test("a DHCPv6 Reply's option 103 is the announcement; its absence is none; cut-short options are refused naming their offset")
    func dhcpv6Reply() throws {
        let uri = Array("https://portal.lab.test/capport".utf8)
        let reply: [UInt8] = [7, 0, 0, 9, 0, 2, 0, 4, 0, 1, 2, 3, 0, 103, UInt8(uri.count >> 8), UInt8(uri.count & 0xff)] + uri
        let message = try DHCPv6Message.parse(reply)
        #expect(message.type == 7 && message.transactionID == 9)
        #expect(try CaptivePortalAnnouncement.from(message) == .api(URL(string: "https://portal.lab.test/capport")!))
        #expect(try CaptivePortalAnnouncement.from(DHCPv6Message.parse([7, 0, 0, 9])) == nil)
        do {
            _ = try DHCPv6Message.parse(Array(reply.dropLast()))
            Issue.record("a cut-short option was read")
        } catch { #expect(error.description.contains("option 103 at offset 12")) }
        do {
            _ = try DHCPv6Message.parse([7, 0, 0, 9, 0, 2, 0])
            Issue.record("a cut-short option header was read")
        } catch { #expect(error.description.contains("offset 4")) }
        do {
            _ = try DHCPv6Message.parse([7, 0])
            Issue.record("a cut-short header was read")
        } catch { #expect(error.description.contains("4-byte header")) }
        let unrestricted = Array(CaptivePortalAnnouncement.unrestrictedURN.utf8)
        #expect(try CaptivePortalAnnouncement.from(DHCPv6Message.parse([7, 0, 0, 1, 0, 103, 0, UInt8(unrestricted.count)] + unrestricted)) == .unrestricted)
    }

    @Test("DHCPv6 option 23 (RFC 3646 §3): 16-byte servers in order, as text; none without it; a length not a multiple of 16 refused")
    func dhcpv6DNSServers() throws {
        let one: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        let two: [UInt8] = [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [2]
        let reply: [UInt8] = [7, 0, 0, 9, 0, 23, 0, 32] + one + two
        #expect(try DHCPv6Message.parse(reply).dnsServers() == ["2001:db8:1::1", "fe80::2"])
        #expect(try DHCPv6Message.parse([7, 0, 0, 9]).dnsServers().isEmpty)
        #expect(throws: CaptivePortalError.self) { try DHCPv6Message.parse([7, 0, 0, 9, 0, 23, 0, 15] + one.dropLast()).dnsServers() }
        let request = DHCPv6Message.informationRequest(transactionID: 1, hardwareAddress: [], requesting: [103, 23])
        #expect(Array(request[4..<12]) == [0, 6, 0, 4, 0, 103, 0, 23], "the option request asks for both")
    }

    /// A Router Advertisement (RFC 4861 §4.2: 16 bytes) followed by `options`.
    static func advertisement(_ options: [UInt8]) -> [UInt8] {
        [134, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + options
    }

    /// An RDNSS option (RFC 8106 §5.1) with `lifetime` and `servers`.
    static func rdnss(lifetime: UInt32, _ servers: [[UInt8]]) -> [UInt8] {
        [25, UInt8(1 + 2 * servers.count), 0, 0, UInt8(lifetime >> 24), UInt8(lifetime >> 16 & 0xff), UInt8(lifetime >> 8 & 0xff), UInt8(lifetime & 0xff)]
            + servers.flatMap { $0 }
    }

    @Test("RA option 25, RDNSS (RFC 8106 §5.1): servers in order, across options; lifetime 0 left out; other options passed over; bad lengths refused naming the offset; 5,000 mutated advertisements never trap")
    func routerAdvertisementDNSServers() throws {
        let one: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        let two: [UInt8] = [0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [1]
        let portal = Array("https://portal.lab.test/capport".utf8)
        let option37 = [37, UInt8((2 + portal.count + 7) / 8)] + portal + [UInt8](repeating: 0, count: (2 + portal.count + 7) / 8 * 8 - 2 - portal.count)
        let message = Self.advertisement(option37 + Self.rdnss(lifetime: 1800, [one, two]) + Self.rdnss(lifetime: 0, [one]) + Self.rdnss(lifetime: 60, [two]))
        #expect(try RouterDiscovery.recursiveDNSServers(in: message) == ["2001:db8:1::1", "fe80::1", "fe80::1"])
        #expect(try CaptivePortalAnnouncement.fromRouterAdvertisement(message) == .api(URL(string: "https://portal.lab.test/capport")!))
        #expect(try RouterDiscovery.recursiveDNSServers(in: Self.advertisement(option37)).isEmpty)
        // Length 2 (no room for an address) and 4 (half an address) are refused.
        for units: UInt8 in [2, 4] {
            var bad = Self.rdnss(lifetime: 60, [one, two])
            bad[1] = units
            // The option as long as it says, so that no other option follows it.
            let bytes = Self.advertisement(Array(bad.prefix(Int(units) * 8)))
            #expect(performing: { try RouterDiscovery.recursiveDNSServers(in: bytes) }, throws: { "\($0)".contains("RDNSS option at offset 16 has length \(units)") })
        }
        #expect(performing: { try RouterDiscovery.recursiveDNSServers(in: Self.advertisement([25, 3, 0, 0])) }, throws: { "\($0)".contains("offset 16 runs past the end") })
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            var bytes = message
            for _ in 0..<Int.random(in: 1...4, using: &generator) { bytes[Int.random(in: 16..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            if Bool.random(using: &generator) { bytes = Array(bytes.prefix(Int.random(in: 16...bytes.count, using: &generator))) }
            if let servers = try? RouterDiscovery.recursiveDNSServers(in: bytes) { #expect(servers.count <= 8) }
        }
    }

    @Test("any bytes are read as a DHCPv6 message or refused, never trapped on (fuzz, 5,000 inputs)")
    func dhcpv6Fuzz() {
        var generator = SystemRandomNumberGenerator()
        let valid: [UInt8] = [7, 0, 0, 9, 0, 103, 0, 8] + Array("https://".utf8)
        for round in 0..<5_000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...3, using: &generator) { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            }
            if let message = try? DHCPv6Message.parse(bytes) { _ = try? CaptivePortalAnnouncement.from(message) }
        }
    }
}
