import Foundation

extension ATSPolicy {
    /// Reads an `NSAppTransportSecurity` dictionary (as `PropertyListSerialization` or
    /// `JSONSerialization` give it). An unknown key, or a value of the wrong type, is refused
    /// with its path (`NSExceptionDomains › example.com › NSIncludesSubdomain`), since a
    /// misspelt key would otherwise leave a rule in force that its author meant to lift.
    public init(dictionary: [String: Any]) throws(ATSPolicyError) {
        self.init()
        for (key, value) in dictionary {
            switch key {
            case "NSAllowsArbitraryLoads": allowsArbitraryLoads = try Self.bool(value, [key])
            case "NSAllowsLocalNetworking": allowsLocalNetworking = try Self.bool(value, [key])
            case "NSAllowsArbitraryLoadsForMedia", "NSAllowsArbitraryLoadsInWebContent":
                _ = try Self.bool(value, [key])
                hasMediaOrWebContentKey = true
            case "NSExceptionDomains":
                for (domain, entry) in try Self.dictionary(value, [key]) {
                    exceptionDomains[domain.lowercased()] = try Self.exception(entry, [key, domain])
                }
            case "NSPinnedDomains":
                for (domain, entry) in try Self.dictionary(value, [key]) {
                    pinnedDomains[domain.lowercased()] = try Self.pinned(entry, [key, domain])
                }
            default:
                throw ATSPolicyError(path: [key], problem: "is not an App Transport Security key")
            }
        }
    }

    /// Reads a policy file: a property list (XML or binary) or JSON, holding either the
    /// `NSAppTransportSecurity` dictionary itself or an Info.plist-like dictionary containing it.
    public init(contentsOf path: String) throws(ATSPolicyError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ATSPolicyError(path: [], problem: "cannot be read from \(path)")
        }
        let object: Any
        do {
            if data.first(where: { !$0.isASCIIWhitespace }) == UInt8(ascii: "{") {
                object = try JSONSerialization.jsonObject(with: data)
            } else {
                object = try PropertyListSerialization.propertyList(from: data, format: nil)
            }
        } catch {
            throw ATSPolicyError(path: [], problem: "in \(path) is neither a property list nor JSON (\(Self.reason(error)))")
        }
        guard let top = object as? [String: Any] else {
            throw ATSPolicyError(path: [], problem: "in \(path) is not a dictionary at the top")
        }
        if let inner = top["NSAppTransportSecurity"] {
            try self.init(dictionary: try Self.dictionary(inner, ["NSAppTransportSecurity"]))
        } else {
            try self.init(dictionary: top)
        }
    }

    private static func exception(_ value: Any, _ path: [String]) throws(ATSPolicyError) -> ATSDomainException {
        var exception = ATSDomainException()
        for (key, item) in try dictionary(value, path) {
            switch key {
            case "NSIncludesSubdomains": exception.includesSubdomains = try bool(item, path + [key])
            case "NSExceptionAllowsInsecureHTTPLoads", "NSThirdPartyExceptionAllowsInsecureHTTPLoads":
                exception.allowsInsecureHTTPLoads = try bool(item, path + [key])
            case "NSExceptionRequiresForwardSecrecy", "NSThirdPartyExceptionRequiresForwardSecrecy":
                exception.requiresForwardSecrecy = try bool(item, path + [key])
            case "NSRequiresCertificateTransparency":
                exception.requiresCertificateTransparency = try bool(item, path + [key])
            case "NSExceptionMinimumTLSVersion", "NSThirdPartyExceptionMinimumTLSVersion":
                guard let text = item as? String, let version = ATSTLSVersion(rawValue: text) else {
                    let names = ATSTLSVersion.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ATSPolicyError(path: path + [key], problem: "must be one of \(names)")
                }
                exception.minimumTLSVersion = version
            default:
                throw ATSPolicyError(path: path + [key], problem: "is not an NSExceptionDomains key")
            }
        }
        return exception
    }

    private static func pinned(_ value: Any, _ path: [String]) throws(ATSPolicyError) -> ATSPinnedDomain {
        var pinned = ATSPinnedDomain()
        for (key, item) in try dictionary(value, path) {
            switch key {
            case "NSIncludesSubdomains": pinned.includesSubdomains = try bool(item, path + [key])
            case "NSPinnedLeafIdentities": pinned.leafIdentities = try identities(item, path + [key])
            case "NSPinnedCAIdentities": pinned.caIdentities = try identities(item, path + [key])
            default:
                throw ATSPolicyError(path: path + [key], problem: "is not an NSPinnedDomains key")
            }
        }
        if pinned.leafIdentities.isEmpty && pinned.caIdentities.isEmpty {
            throw ATSPolicyError(path: path, problem: "pins nothing: give NSPinnedLeafIdentities or NSPinnedCAIdentities")
        }
        return pinned
    }

    private static func identities(_ value: Any, _ path: [String]) throws(ATSPolicyError) -> Set<String> {
        guard let list = value as? [Any] else { throw ATSPolicyError(path: path, problem: "must be an array") }
        var identities = Set<String>()
        for (index, entry) in list.enumerated() {
            let entryPath = path + ["[\(index)]"]
            let fields = try dictionary(entry, entryPath)
            guard let hash = fields["SPKI-SHA256-BASE64"] as? String, fields.count == 1 else {
                throw ATSPolicyError(path: entryPath, problem: "must be a dictionary with one key, SPKI-SHA256-BASE64")
            }
            guard let bytes = Data(base64Encoded: hash), bytes.count == 32 else {
                throw ATSPolicyError(path: entryPath + ["SPKI-SHA256-BASE64"], problem: "must be the base64 of a 32-byte SHA-256 hash")
            }
            identities.insert(bytes.base64EncodedString())
        }
        return identities
    }

    private static func dictionary(_ value: Any, _ path: [String]) throws(ATSPolicyError) -> [String: Any] {
        guard let dictionary = value as? [String: Any] else { throw ATSPolicyError(path: path, problem: "must be a dictionary") }
        return dictionary
    }

    private static func bool(_ value: Any, _ path: [String]) throws(ATSPolicyError) -> Bool {
        // Foundation hands booleans over as NSNumbers; theirs are typed "c" (or "B"), a 1 is not.
        if let number = value as? NSNumber, ["c", "B"].contains(String(cString: number.objCType)) { return number.boolValue }
        throw ATSPolicyError(path: path, problem: "must be a boolean (true/false, <true/>/<false/>)")
    }

    private static func reason(_ error: any Error) -> String {
        (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
    }
}

/// A policy that cannot be used, naming the key at fault.
public struct ATSPolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The keys from `NSAppTransportSecurity` down to the one at fault.
    public var path: [String]
    public var problem: String

    public var description: String {
        path.isEmpty ? "The App Transport Security policy \(problem)." : "NSAppTransportSecurity › \(path.joined(separator: " › ")) \(problem)."
    }
}

extension UInt8 {
    fileprivate var isASCIIWhitespace: Bool { self == 0x20 || self == 0x09 || self == 0x0A || self == 0x0D }
}
