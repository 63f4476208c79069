import Foundation
import NetExt
import NetExtHTTP

/// The reference hotspot helper (`netext-hotspot-helper`): claims the networks of the
/// interfaces and SSIDs it is given, logs in to their captive portal by posting its login form
/// (`application/x-www-form-urlencoded`, RFC 1866 §8.2.1) with the user and the password read
/// from a file (never from the command line), posts the form again to `maintain` the session
/// (portals that time sessions out renew them so), and posts to the logout URL on `logoff`.
///
/// Every request leaves by the network's own interface (`SO_BINDTODEVICE`, as Apple's
/// `createTCPConnection` binds a helper's connections), so `maintain` reaches the portal even
/// once a full VPN owns the default route. App Transport Security holds: an `http:` login or
/// logout URL is an exception for its host alone, as an app's Info.plist would name it.
///
/// Results, as Apple's helpers give them: a 2xx answer is `success`; 401 or 403 (wrong user or
/// password) `failure`; another status or no answer `temporaryFailure` (netextd retries); a
/// command it does not handle (`presentUI`: it has no UI) `commandNotRecognized`.
public final class FormLoginHotspotHelper: HotspotHelper {
    public struct Settings: Sendable {
        /// Where the login form is posted.
        public var loginURL: URL
        /// Where `logoff` posts (nil: logoff is only acknowledged).
        public var logoutURL: URL?
        /// The form's fields, user and password included, in order.
        public var fields: [(name: String, value: String)]
        /// The interfaces whose networks it claims (empty: every network).
        public var interfaces: [String]
        /// The SSIDs it claims (empty: any network, named or not).
        public var ssids: [String] = []
        /// The confidence it claims them with.
        public var confidence: HotspotNetwork.Confidence
    }

    public let settings: Settings
    private let trust: HTTPTrust
    private let transportSecurity: ATSPolicy

    /// `trust`: whom the portal's certificate must be signed by.
    public init(settings: Settings, trust: HTTPTrust = .system) {
        self.settings = settings
        self.trust = trust
        var policy = ATSPolicy.strict
        for url in [settings.loginURL, settings.logoutURL].compactMap({ $0 }) where url.scheme == "http" {
            var exception = ATSDomainException()
            exception.allowsInsecureHTTPLoads = true
            policy.exceptionDomains[url.host?.lowercased() ?? ""] = exception
        }
        transportSecurity = policy
    }

    public static let usage = """
        netext-hotspot-helper --login-url https://PORTAL/login --user USER --password-file FILE
            [--user-field NAME] [--password-field NAME] [--field NAME=VALUE]… [--logout-url URL]
            [--interface IFACE]… [--ssid SSID]… [--confidence high|low] [--ca-file PEM]
        """

    /// Reads the settings from the manifest's arguments; the password from `--password-file`.
    public convenience init(arguments: [String]) throws(NetExtError) {
        var values: [String: [String]] = [:]
        var index = 0
        while index < arguments.count {
            let option = arguments[index]
            guard option.hasPrefix("--"), index + 1 < arguments.count else {
                throw .invalid("argument '\(option)' is not an option with a value (usage: \(Self.usage))")
            }
            guard Self.options.contains(option) else { throw .invalid("unknown option \(option) (usage: \(Self.usage))") }
            values[option, default: []].append(arguments[index + 1])
            index += 2
        }
        func url(_ option: String) throws(NetExtError) -> URL? {
            guard let text = values[option]?.last else { return nil }
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw .invalid("\(option): '\(text)' is not an http(s) URL")
            }
            return url
        }
        guard let loginURL = try url("--login-url") else { throw .invalid("--login-url is required (usage: \(Self.usage))") }
        guard let user = values["--user"]?.last else { throw .invalid("--user is required") }
        guard let passwordFile = values["--password-file"]?.last else { throw .invalid("--password-file is required (a password is never given on the command line)") }
        guard let data = FileManager.default.contents(atPath: passwordFile) else {
            throw .invalid("--password-file: cannot read \(passwordFile) (missing, or not readable by the helper's user)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw .invalid("--password-file: \(passwordFile) is not UTF-8 text") }
        let password = text.trimmingCharacters(in: .newlines)
        guard !password.isEmpty else { throw .invalid("--password-file: \(passwordFile) is empty") }
        var fields = [(name: values["--user-field"]?.last ?? "user", value: user), (name: values["--password-field"]?.last ?? "password", value: password)]
        for field in values["--field"] ?? [] {
            guard let equals = field.firstIndex(of: "="), equals != field.startIndex else { throw .invalid("--field: '\(field)' is not NAME=VALUE") }
            fields.append((String(field[..<equals]), String(field[field.index(after: equals)...])))
        }
        let confidence: HotspotNetwork.Confidence
        switch values["--confidence"]?.last ?? "high" {
        case "high": confidence = .high
        case "low": confidence = .low
        case let other: throw .invalid("--confidence: '\(other)' is not high or low")
        }
        var trust = HTTPTrust.system
        if let caFile = values["--ca-file"]?.last {
            do throws(HTTPLoadError) { trust = try HTTPTrust.pemFile(caFile) } catch { throw .invalid("--ca-file: \(error.description)") }
        }
        var settings = Settings(loginURL: loginURL, logoutURL: try url("--logout-url"), fields: fields, interfaces: values["--interface"] ?? [], confidence: confidence)
        settings.ssids = values["--ssid"] ?? []
        self.init(settings: settings, trust: trust)
    }

    static let options: Set<String> = [
        "--login-url", "--logout-url", "--user", "--password-file", "--user-field", "--password-field", "--field", "--interface", "--ssid", "--confidence", "--ca-file",
    ]

    /// Whether it claims `network`: on one of its interfaces, with one of its SSIDs.
    func claims(_ network: HotspotNetwork) -> Bool {
        (settings.interfaces.isEmpty || settings.interfaces.contains(network.interface))
            && (settings.ssids.isEmpty || settings.ssids.contains(network.ssid))
    }

    public func handle(_ command: HotspotHelperCommand) async -> HotspotHelperResponse {
        switch command.kind {
        case .filterScanList:
            var response = command.createResponse(.success)
            response.setNetworkList(command.networkList.filter(claims).map { network in
                var claimed = network
                claimed.setConfidence(settings.confidence)
                return claimed
            })
            return response
        case .evaluate:
            guard var network = command.network else { return command.createResponse(.failure) }
            network.setConfidence(claims(network) ? settings.confidence : .none)
            var response = command.createResponse(.success)
            response.setNetwork(network)
            return response
        case .authenticate, .maintain:
            return command.createResponse(await post(Self.formBody(settings.fields), to: settings.loginURL, via: command.network?.interface))
        case .logoff:
            guard let logoutURL = settings.logoutURL else { return command.createResponse(.success) }
            return command.createResponse(await post([], to: logoutURL, via: command.network?.interface))
        case .presentUI:
            return command.createResponse(.commandNotRecognized)
        }
    }

    /// Posts `body` to `url` out of `interface` (the network's link) and maps the answer.
    func post(_ body: [UInt8], to url: URL, via interface: String?) async -> HotspotHelperResponse.Result {
        var configuration = URLSessionConfiguration.ephemeral
        configuration.requiredInterface = interface
        configuration.trust = trust
        configuration.appTransportSecurity = transportSecurity
        configuration.urlFilter = nil
        configuration.httpCookieStorage = nil
        configuration.timeoutIntervalForRequest = 10
        configuration.maximumRedirects = 0
        let session = URLSession(configuration: configuration)
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.allHTTPHeaderFields = ["Content-Type": "application/x-www-form-urlencoded"]
        request.httpBody = Data(body)
        let status: Int?
        do { status = try await session.data(for: request).1.statusCode } catch {
            status = nil
            // netextd logs the helper's standard error: an admin sees why a login keeps failing.
            FileHandle.standardError.write(Data("hotspot helper: POST \(url.absoluteString) via \(interface ?? "the routing table"): \(error)\n".utf8))
        }
        await session.invalidateAndCancel()
        switch status {
        case (200..<300)?: return .success
        case 401?, 403?: return .failure
        default: return .temporaryFailure
        }
    }

    /// `name=value&…`, each percent-encoded as a form is (RFC 1866 §8.2.1; space as `+`).
    static func formBody(_ fields: [(name: String, value: String)]) -> [UInt8] {
        Array(fields.map { "\(formEncoded($0.name))=\(formEncoded($0.value))" }.joined(separator: "&").utf8)
    }

    static func formEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "*"):
                encoded.append(Character(UnicodeScalar(byte)))
            case UInt8(ascii: " "):
                encoded.append("+")
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }
}
