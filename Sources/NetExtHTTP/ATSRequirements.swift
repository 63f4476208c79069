/// The rules one load must meet, resolved from an ``ATSPolicy`` for its host: which entry
/// governs it, and what that entry leaves in force.
public struct ATSRequirements: Sendable, Hashable {
    /// Where these rules come from: "default", "NSAllowsArbitraryLoads",
    /// "NSAllowsLocalNetworking" or "NSExceptionDomains › example.com".
    public var source: String
    /// The domain the rules are keyed by, for the advice in refusals (the exception domain's
    /// name, else the host).
    public var domain: String
    public var allowsInsecureHTTP = false
    public var minimumTLSVersion = ATSTLSVersion.tls12
    public var requiresForwardSecrecy = true
    /// Keys of at least 2048 bits (RSA) or 256 bits (ECC), signed with SHA-2.
    public var requiresStrongCertificates = true
    public var requiresCertificateTransparency = false
    /// `NSPinnedDomains`, which apply whatever else is lifted.
    public var pinnedLeafIdentities: Set<String> = []
    public var pinnedCAIdentities: Set<String> = []

    /// Every rule lifted (TLS itself still checks the certificate's name, validity and issuer).
    static func lifted(source: String, domain: String) -> ATSRequirements {
        ATSRequirements(
            source: source, domain: domain, allowsInsecureHTTP: true, minimumTLSVersion: .tls10,
            requiresForwardSecrecy: false, requiresStrongCertificates: false)
    }

    /// The rules in force, for logs: "https only, TLS ≥ 1.2, forward secrecy, strong certificate".
    public var summary: String {
        var rules: [String] = []
        if !allowsInsecureHTTP { rules.append("https only") }
        rules.append("TLS ≥ \(minimumTLSVersion.rawValue.dropFirst(4))")
        rules.append(requiresForwardSecrecy ? "forward secrecy" : "no forward secrecy required")
        if requiresStrongCertificates { rules.append("strong certificate") }
        if requiresCertificateTransparency { rules.append("certificate transparency") }
        if !pinnedLeafIdentities.isEmpty || !pinnedCAIdentities.isEmpty { rules.append("pinned") }
        return rules.joined(separator: ", ")
    }

    /// Whether any ATS rule applies beyond pins.
    public var isEnforced: Bool { !allowsInsecureHTTP || requiresForwardSecrecy || minimumTLSVersion > .tls10 || requiresStrongCertificates }
}

extension ATSPolicy {
    /// The rules for a load of `host` (a name or an IP literal, without brackets).
    public func requirements(for host: String) -> ATSRequirements {
        let name = host.lowercased().trimmingTrailingDot
        var requirements: ATSRequirements
        if let (domain, exception) = Self.mostSpecific(exceptionDomains, for: name, includesSubdomains: \.includesSubdomains) {
            requirements = ATSRequirements(
                source: "NSExceptionDomains › \(domain)", domain: domain,
                allowsInsecureHTTP: exception.allowsInsecureHTTPLoads,
                minimumTLSVersion: exception.minimumTLSVersion,
                requiresForwardSecrecy: exception.requiresForwardSecrecy,
                requiresStrongCertificates: !exception.allowsInsecureHTTPLoads,
                requiresCertificateTransparency: exception.requiresCertificateTransparency)
        } else if allowsLocalNetworking && LocalNetworkName.isLocal(name) {
            requirements = .lifted(source: "NSAllowsLocalNetworking", domain: name)
        } else if arbitraryLoadsInForce {
            requirements = .lifted(source: "NSAllowsArbitraryLoads", domain: name)
        } else {
            requirements = ATSRequirements(source: "default", domain: name)
        }
        if let (_, pins) = Self.mostSpecific(pinnedDomains, for: name, includesSubdomains: \.includesSubdomains) {
            requirements.pinnedLeafIdentities = pins.leafIdentities
            requirements.pinnedCAIdentities = pins.caIdentities
        }
        return requirements
    }

    /// The entry named exactly `name`, else the longest parent domain whose entry includes
    /// subdomains.
    static func mostSpecific<Entry>(_ entries: [String: Entry], for name: String, includesSubdomains: KeyPath<Entry, Bool>) -> (String, Entry)? {
        guard !entries.isEmpty else { return nil }
        if let exact = entries[name] { return (name, exact) }
        var labels = name.split(separator: ".", omittingEmptySubsequences: false)
        while labels.count > 1 {
            labels.removeFirst()
            let parent = labels.joined(separator: ".")
            if let entry = entries[parent], entry[keyPath: includesSubdomains] { return (parent, entry) }
        }
        return nil
    }
}

/// What `NSAllowsLocalNetworking` counts as local.
enum LocalNetworkName {
    static func isLocal(_ name: String) -> Bool {
        if let address = IPLiteral(name) { return address.isLocal }
        return !name.contains(".") || name.hasSuffix(".local")
    }
}

extension String {
    var trimmingTrailingDot: String { hasSuffix(".") ? String(dropLast()) : self }
}
