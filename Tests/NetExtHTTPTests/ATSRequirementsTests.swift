import Testing

@testable import NetExtHTTP

@Suite("Which rules a host's loads get")
struct ATSRequirementsTests {
    @Test("no policy: every rule")
    func strict() {
        let requirements = ATSPolicy.strict.requirements(for: "www.example.com")
        #expect(requirements.source == "default")
        #expect(!requirements.allowsInsecureHTTP && requirements.minimumTLSVersion == .tls12 && requirements.requiresForwardSecrecy && requirements.requiresStrongCertificates)
    }

    @Test("an exception names its domain, subdomains only with NSIncludesSubdomains, the most specific wins")
    func exceptions() {
        var policy = ATSPolicy()
        var parent = ATSDomainException()
        parent.includesSubdomains = true
        parent.minimumTLSVersion = .tls10
        policy.exceptionDomains["example.com"] = parent
        var child = ATSDomainException()
        child.requiresForwardSecrecy = false
        policy.exceptionDomains["api.example.com"] = child
        var alone = ATSDomainException()
        alone.allowsInsecureHTTPLoads = true
        policy.exceptionDomains["plain.example"] = alone

        #expect(policy.requirements(for: "example.com").minimumTLSVersion == .tls10)
        #expect(policy.requirements(for: "a.b.example.com").source == "NSExceptionDomains › example.com")
        let api = policy.requirements(for: "API.example.com.")
        #expect(api.source == "NSExceptionDomains › api.example.com" && !api.requiresForwardSecrecy && api.minimumTLSVersion == .tls12)
        // api.example.com's entry does not include subdomains: its child falls back to the parent's.
        #expect(policy.requirements(for: "v1.api.example.com").source == "NSExceptionDomains › example.com")
        #expect(policy.requirements(for: "plain.example").allowsInsecureHTTP)
        #expect(!policy.requirements(for: "plain.example").requiresStrongCertificates)
        #expect(policy.requirements(for: "www.plain.example").source == "default")
        #expect(policy.requirements(for: "notexample.com").source == "default")
    }

    @Test("allow-all lifts everything except the domains listed, which keep the default rules")
    func allowAllWithProtectedDomain() {
        var policy = ATSPolicy()
        policy.allowsArbitraryLoads = true
        policy.exceptionDomains["bank.example"] = ATSDomainException()
        #expect(policy.requirements(for: "news.example").allowsInsecureHTTP)
        #expect(!policy.requirements(for: "news.example").isEnforced)
        let bank = policy.requirements(for: "bank.example")
        #expect(!bank.allowsInsecureHTTP && bank.minimumTLSVersion == .tls12 && bank.isEnforced)
    }

    @Test("local networking: unqualified names, .local, local IP literals; it switches allow-all off")
    func localNetworking() {
        var policy = ATSPolicy()
        policy.allowsLocalNetworking = true
        policy.allowsArbitraryLoads = true
        #expect(!policy.arbitraryLoadsInForce)
        for host in ["printer", "nas.local", "127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.9.9", "::1", "fd00::5", "fe80::1"] {
            #expect(policy.requirements(for: host).source == "NSAllowsLocalNetworking", "\(host)")
        }
        for host in ["example.com", "8.8.8.8", "172.32.0.1", "2001:db8::1", "local.example"] {
            #expect(policy.requirements(for: host).source == "default", "\(host)")
        }
        var media = ATSPolicy()
        media.allowsArbitraryLoads = true
        media.hasMediaOrWebContentKey = true
        #expect(media.requirements(for: "example.com").source == "default")
    }

    @Test("pins apply whatever else is lifted, to subdomains when included")
    func pins() {
        var policy = ATSPolicy()
        policy.allowsArbitraryLoads = true
        var pinned = ATSPinnedDomain()
        pinned.includesSubdomains = true
        pinned.leafIdentities = ["key"]
        policy.pinnedDomains["example.com"] = pinned
        #expect(policy.requirements(for: "www.example.com").pinnedLeafIdentities == ["key"])
        #expect(policy.requirements(for: "www.example.com").allowsInsecureHTTP)
        #expect(policy.requirements(for: "example.org").pinnedLeafIdentities.isEmpty)
    }
}
