import BloomFilter
import Testing
@testable import URLFilter

@Suite("URL filter keys")
struct URLFilterKeyTests {
    @Test func applesDocumentedExampleGivesItsTwentyFourKeys() throws {
        let key = try URLFilterKey(parsing: "https://www.example.com/a/b/c?id=123#fragment")
        var expected: [String] = []
        for host in ["example.com", "www.example.com"] {
            expected += [host, host + "/"]
            for prefix in ["/a", "/a/b", "/a/b/c"] { expected += [host + prefix, host + prefix + "/"] }
            expected += [host + "/a/b/c?id=123", host + "/a/b/c?id=123/"]
            expected += [host + "/a/b/c?id=123#fragment", host + "/a/b/c?id=123#fragment/"]
        }
        #expect(key.checkedKeys == expected)
        #expect(key.checkedKeys.count == 24)
        #expect(key.description == "www.example.com/a/b/c?id=123#fragment")
    }

    @Test(arguments: [
        ("HTTPS://User:pw@WWW.Example.COM:8443/a", "www.example.com/a"),
        ("example.com", "example.com"),
        ("example.com.", "example.com"),
        ("ftp://example.com/", "example.com/"),
        ("//example.com/x", "example.com/x"),
        ("https://example.com/a/./b/../c/", "example.com/a/c/"),
        ("https://example.com//a///b", "example.com/a/b"),
        ("https://example.com/%7euser/%2f%41?q=%3d#%66", "example.com/~user/%2FA?q=%3D#f"),
        ("https://example.com/caf\u{E9}", "example.com/caf%C3%A9"),
        ("https://B\u{FC}cher.example/", "xn--bcher-kva.example/"),
        ("https://m\u{FC}nchen.de/a b", "xn--mnchen-3ya.de/a"),  // space: refused below; here trimmed? (see invalid list)
        ("http://[2001:DB8::1]:80/p", "[2001:db8::1]/p"),
        ("192.0.2.1/path", "192.0.2.1/path"),
    ])
    func normalization(input: String, expected: String) throws {
        if input.contains(" ") {
            #expect(throws: URLFilterError.self) { try URLFilterKey(parsing: input) }
            return
        }
        #expect(try URLFilterKey(parsing: input).description == expected)
    }

    @Test func deeperSubdomainsCheckEveryParentDomain() throws {
        let key = try URLFilterKey(parsing: "https://a.b.example.com/")
        #expect(key.checkedHosts == ["example.com", "b.example.com", "a.b.example.com"])
        #expect(try URLFilterKey(parsing: "https://192.0.2.1/").checkedHosts == ["192.0.2.1"])
        #expect(try URLFilterKey(parsing: "localhost").checkedHosts == ["localhost"])
        let deep = try URLFilterKey(parsing: "https://" + (1...12).map { "l\($0)" }.joined(separator: ".") + "/")
        #expect(deep.checkedHosts.count == 8)
        #expect(deep.checkedHosts.last == deep.host)
    }

    @Test func recordsAndChecksShareOneNormalization() throws {
        // A record written any way matches a URL written any other way.
        let record = try URLFilterKey(parsing: "HTTP://Example.COM:80/A/%7e/").description
        let keys = try URLFilterKey(parsing: "https://www.example.com/A/~/x?y").checkedKeys
        #expect(keys.contains(record))
        // Paths are case-sensitive.
        #expect(!(try URLFilterKey(parsing: "https://example.com/a/~/").checkedKeys.contains(record)))
    }

    @Test(arguments: ["", "   ", "https://", "https:///path", "http://exa mple.com/", "https://exa%41mple.com/", "https://example.com:port/",
                      "https://[::1/", "https://*.example.com/", "https://" + String(repeating: "a", count: 64) + ".com/"])
    func invalidURLsAreRefusedWithAReason(input: String) {
        #expect(throws: URLFilterError.self) { try URLFilterKey(parsing: input) }
    }

    @Test func punycodeMatchesRFC3492Samples() {
        // RFC 3492 §7.1 (A) Arabic (Egyptian) and (L) "3<nen>B<gumi><kinpachi><sensei>"; plus IDNA examples.
        #expect(Punycode.encode("\u{0644}\u{064A}\u{0647}\u{0645}\u{0627}\u{0628}\u{062A}\u{0643}\u{0644}\u{0645}\u{0648}\u{0634}\u{0639}\u{0631}\u{0628}\u{064A}\u{061F}") == "egbpdaj6bu4bxfgehfvwxn")
        #expect(Punycode.encode("3\u{5E74}B\u{7D44}\u{91D1}\u{516B}\u{5148}\u{751F}") == "3B-ww4c5e180e575a65lsy2b")
        #expect(Punycode.encode("b\u{FC}cher") == "bcher-kva")
        #expect(Punycode.encode("abc") == "abc-")
    }

    @Test func normalizationIsIdempotentAndNeverCrashes() throws {
        var state: UInt64 = 0x1234_5678
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 33 }
        let alphabet = Array("abcXYZ09-._~%/?#:@[]!$&'()*+,;=é ü\u{0}\t")
        var parsed = 0
        for _ in 0..<8000 {
            let length = Int(next() % 40)
            let text = String((0..<length).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] })
            guard let key = try? URLFilterKey(parsing: text) else { continue }
            parsed += 1
            let again = try URLFilterKey(parsing: key.description)
            #expect(again == key, "\(text) → \(key.description) → \(again.description)")
            #expect(key.checkedKeys.contains(key.description), "\(key.description) not among its own checked keys")
        }
        #expect(parsed > 100)
    }
}

@Suite("URL keys: fast paths agree with the general ones")
struct URLFilterKeyFastPathTests {
    /// Random URL-ish strings from pieces that exercise schemes, ports, case, dots, percent
    /// escapes, empty segments, queries and fragments.
    static func randomURL(_ generator: inout some RandomNumberGenerator) -> String {
        let schemes = ["https://", "http://", "//", "", "ftp+x://", "1http://", "://"]
        let labels = ["www", "Example", "a", "b-c", "x_y", "com", "CO", "uk", "1", "255", "0", "xn--bcher-kva", ""]
        let segments = ["", "a", "B", ".", "..", "%41", "%2f", "%e2%82%ac", "x y", "~u", "index.html", "a:b", "@"]
        var url = schemes.randomElement(using: &generator)!
        let labelCount = Int.random(in: 1...6, using: &generator)
        url += (0..<labelCount).map { _ in labels.randomElement(using: &generator)! }.joined(separator: ".")
        if Bool.random(using: &generator) { url += ["", ".", ":8080", ":", ":x"].randomElement(using: &generator)! }
        for _ in 0..<Int.random(in: 0...4, using: &generator) { url += "/" + segments.randomElement(using: &generator)! }
        if Int.random(in: 0..<3, using: &generator) == 0 { url += "?" + ["q=1", "", "a=%7e&b", "x/y"].randomElement(using: &generator)! }
        if Int.random(in: 0..<4, using: &generator) == 0 { url += "#" + ["top", "", "a/b", "%20"].randomElement(using: &generator)! }
        return url
    }

    @Test func asciiParseMatchesTheGeneralParse() {
        var generator = SystemRandomNumberGenerator()
        var fastHits = 0
        for _ in 0..<20_000 {
            let url = Self.randomURL(&generator)
            let general = try? URLFilterKey(parsingGeneral: url)
            if let fast = URLFilterKey.parseASCII(url) {
                fastHits += 1
                #expect(fast == general, "\(url)")
            }
            #expect((try? URLFilterKey(parsing: url)) == general, "\(url)")
        }
        #expect(fastHits > 5_000)
    }

    @Test func streamingPrefilterCheckMatchesTheKeys() throws {
        var generator = SystemRandomNumberGenerator()
        var agreedPositive = 0, agreedNegative = 0
        for round in 0..<300 {
            // Small filters with many keys inserted give plenty of positives and negatives.
            var filter = try BloomFilter(capacity: 64, falsePositiveRate: 0.2, murmurSeed: UInt32(round))
            var inserted = 0
            while inserted < 40 {
                guard let key = try? URLFilterKey(parsing: Self.randomURL(&generator)) else { continue }
                if let some = key.checkedKeys.randomElement(using: &generator) { filter.insert(some) }
                inserted += 1
            }
            for _ in 0..<100 {
                guard let key = try? URLFilterKey(parsing: Self.randomURL(&generator)) else { continue }
                let reference = key.checkedKeys.contains(where: filter.contains)
                #expect(key.mayBeListed(in: filter) == reference, "\(key)")
                if reference { agreedPositive += 1 } else { agreedNegative += 1 }
            }
        }
        #expect(agreedPositive > 1000 && agreedNegative > 1000)
    }

    @Test func checkStraightFromTheTextMatchesParseThenCheck() throws {
        var generator = SystemRandomNumberGenerator()
        var fused = 0
        for round in 0..<200 {
            var filter = try BloomFilter(capacity: 64, falsePositiveRate: 0.2, murmurSeed: UInt32(round))
            for _ in 0..<40 {
                if let key = try? URLFilterKey(parsing: Self.randomURL(&generator)), let some = key.checkedKeys.randomElement(using: &generator) { filter.insert(some) }
            }
            for _ in 0..<100 {
                let url = Self.randomURL(&generator)
                guard let direct = URLFilterKey.mayBeListed(url: url, in: filter) else { continue }
                fused += 1
                let key = try #require(try? URLFilterKey(parsing: url), "\(url) was checked directly but does not parse")
                #expect(direct == key.mayBeListed(in: filter), "\(url)")
            }
        }
        #expect(fused > 3000)
    }
}
