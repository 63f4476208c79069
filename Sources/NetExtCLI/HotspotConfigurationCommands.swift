import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// `netext hotspot configure`: Apple's `NEHotspotConfigurationManager.apply(_:)` from the shell.
struct HotspotConfigureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "configure", abstract: "Join a Wi-Fi network and keep its configuration (NEHotspotConfiguration).",
        discussion: """
            Talks to the machine's Wi-Fi service (NetworkManager, else wpa_supplicant, over D-Bus, which checks your \
            rights as for any program); netextd is not involved. Secrets are read from standard input, never from the command line: \
            --passphrase-stdin for WPA/WEP, --password-stdin for EAP. The network is joined now if it is in range, \
            else whenever it comes in range (unless --join-once, which needs it in range). Exits 0 (also when the \
            network was already joined: the configuration is kept), 3 when the configuration is invalid (the message \
            names what), 5 when the Wi-Fi service refused or none runs.
            """)
    @Argument(help: "The network's SSID (with --ssid-prefix: the start of the SSIDs to join; with --hs20-domain: leave it out).")
    var ssid: String?
    @Flag(help: "Read the WPA/WPA2 passphrase (8–63 characters, or 64 hex digits) from standard input.") var passphraseStdin = false
    @Flag(help: "With --passphrase-stdin: the network is WPA3 only (SAE).") var wpa3 = false
    @Flag(help: "With --passphrase-stdin: the key is WEP (5 or 13 characters, or 10 or 26 hex digits).") var wep = false
    @Option(help: "Enterprise (802.1X): the EAP methods, comma-separated: peap, ttls, fast.") var eap: String?
    @Option(help: "Enterprise: the username.") var username: String?
    @Flag(help: "Enterprise: read the password from standard input.") var passwordStdin = false
    @Option(help: "Enterprise: the outer (anonymous) identity.") var outerIdentity: String?
    @Option(help: "Enterprise: a name the RADIUS server's certificate must carry (repeatable).") var trustedServer: [String] = []
    @Option(help: "Enterprise, TTLS: the inner authentication: pap, chap, mschap, mschapv2 (default), eap.") var ttlsInner = "mschapv2"
    @Option(help: "Hotspot 2.0: the operator's domain name (with --eap).") var hs20Domain: String?
    @Option(help: "Hotspot 2.0: an NAI realm of the operator (repeatable; default: the domain).") var naiRealm: [String] = []
    @Option(help: "Hotspot 2.0: a roaming consortium OI, 6 or 10 hex digits (repeatable).") var roamingConsortium: [String] = []
    @Option(help: "Hotspot 2.0: a mobile network code, MCC then MNC (repeatable).") var mccMnc: [String] = []
    @Flag(help: "Hotspot 2.0: join the operator's own hotspots only, not its roaming partners'.") var noRoaming = false
    @Flag(help: "The argument is an SSID prefix: join any network whose SSID starts with it.") var ssidPrefix = false
    @Flag(help: "Join this time only; keep nothing.") var joinOnce = false
    @Option(help: "Keep the configuration this many days (1–3650).") var lifetimeDays: Int?
    @Flag(help: "The network does not broadcast its SSID.") var hidden = false

    func run() async throws {
        try await reportingHotspotFailures {
            var configuration = try makeConfiguration()
            configuration.joinOnce = joinOnce
            configuration.lifeTimeInDays = lifetimeDays
            configuration.hidden = hidden
            let manager = try await HotspotConfigurationManager.shared()
            do {
                try await manager.apply(configuration)
                print("\(configuration.name): configured with \(manager.service.name)\(joinOnce ? " (join once)" : "")")
            } catch HotspotConfigurationError.alreadyAssociated(let detail) {
                print("\(configuration.name): \(detail)")
            }
        }
    }

    func makeConfiguration() throws -> HotspotConfiguration {
        if let hs20Domain {
            guard ssid == nil else { throw UsageError("--hs20-domain configures by operator domain: leave the SSID out") }
            let settings = HotspotHS20Settings(
                domainName: hs20Domain, roamingEnabled: !noRoaming, roamingConsortiumOIs: roamingConsortium, naiRealmNames: naiRealm, mccAndMNCs: mccMnc)
            return HotspotConfiguration(hs20Settings: settings, eapSettings: try eapSettings() ?? {
                throw UsageError("--hs20-domain needs --eap")
            }())
        }
        if !naiRealm.isEmpty || !roamingConsortium.isEmpty || !mccMnc.isEmpty || noRoaming {
            throw UsageError("--nai-realm, --roaming-consortium, --mcc-mnc and --no-roaming go with --hs20-domain")
        }
        guard let ssid else { throw UsageError("name the network's SSID") }
        if passphraseStdin, eap != nil { throw UsageError("--passphrase-stdin and --eap do not go together") }
        if (wpa3 || wep) && !passphraseStdin { throw UsageError("--wpa3 and --wep go with --passphrase-stdin") }
        if wpa3 && wep { throw UsageError("--wpa3 and --wep do not go together") }
        let security: HotspotConfiguration.Security
        if passphraseStdin {
            let passphrase = try StandardInput.readSecretLine(option: "--passphrase-stdin", what: "passphrase")
            security = wep ? .wep(passphrase: passphrase) : .personal(passphrase: passphrase, wpa3Only: wpa3)
        } else if let eapSettings = try eapSettings() {
            security = .enterprise(eapSettings)
        } else {
            security = .open
        }
        if ssidPrefix { return HotspotConfiguration(ssidPrefix: ssid, security: security) }
        var configuration = HotspotConfiguration(ssid: ssid)
        configuration.security = security
        return configuration
    }

    func eapSettings() throws -> HotspotEAPSettings? {
        guard let eap else {
            if username != nil || passwordStdin || outerIdentity != nil || !trustedServer.isEmpty { throw UsageError("the enterprise options go with --eap") }
            return nil
        }
        let types = try eap.split(separator: ",").map { name in
            guard let type = HotspotEAPSettings.EAPType.allCases.first(where: { $0.name == name }) else {
                throw UsageError("--eap '\(name)' is not one of peap, ttls, fast")
            }
            return type
        }
        guard let inner = HotspotEAPSettings.TTLSInnerAuthenticationType(rawValue: ttlsInner) else {
            throw UsageError("--ttls-inner '\(ttlsInner)' is not one of pap, chap, mschap, mschapv2, eap")
        }
        guard passwordStdin else { throw UsageError("--eap needs --password-stdin") }
        let password = try StandardInput.readSecretLine()
        return HotspotEAPSettings(
            supportedEAPTypes: types, username: username ?? "", outerIdentity: outerIdentity ?? "", password: password,
            ttlsInnerAuthenticationType: inner, trustedServerNames: trustedServer)
    }
}

/// `netext hotspot configured`: Apple's `getConfiguredSSIDs()`.
struct HotspotConfiguredCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "configured", abstract: "List the Wi-Fi configurations made through NetExt (getConfiguredSSIDs).")
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await reportingHotspotFailures {
            let names = try await HotspotConfigurationManager.shared().getConfiguredSSIDs()
            if json {
                print(String(decoding: try JSONEncoder().encode(names), as: UTF8.self))
            } else {
                names.forEach { print($0) }
            }
        }
    }
}

/// `netext hotspot remove`: Apple's `removeConfiguration(forSSID:)`.
struct HotspotRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Forget a Wi-Fi configuration made through NetExt (others are never touched).")
    @Argument(help: "The SSID (or Hotspot 2.0 domain, or prefix followed by *).") var name: String

    func run() async throws {
        try await reportingHotspotFailures {
            try await HotspotConfigurationManager.shared().removeConfiguration(forSSID: name)
            print("\(name): removed")
        }
    }
}

/// `netext hotspot list`: what the Wi-Fi service sees, with the hotspot helpers' claims.
struct HotspotListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "The Wi-Fi networks in range, strongest first, which is joined, and the hotspot helper claiming each.",
        discussion: """
            netextd asks the Wi-Fi service (NetworkManager, wpa_supplicant or iwd, over D-Bus) for its scan list and each running hotspot helper \
            to claim networks from it (filterScanList); the HELPER column shows the most confident claim. Without \
            netextd the list comes from the Wi-Fi service directly, without claims. Exits 5 when no Wi-Fi service answers.
            """)
    @OptionGroup var options: ClientOptions
    @Option(help: "Only this Wi-Fi interface.") var interface: String?

    func run() async throws {
        try await reportingHotspotFailures {
            let report: HotspotListReport
            do {
                report = try await options.withClient { client in try await client.call(GetHotspotList(interface: interface)) }
            } catch where Self.isDaemonUnavailable(error) {
                report = try await Self.direct(interface: interface)
                if !options.json { StandardStreams.error(Data("netext: netextd is not running; no hotspot helper was asked\n".utf8)) }
            }
            if options.json { try options.printJSON(report); return }
            guard report.service != nil else { throw HotspotConfigurationError.systemConfiguration(report.failure ?? "No Wi-Fi service answered.") }
            let joined = Set(report.joinedBSSIDs)
            let rows = report.scanList.entries.map { entry in
                let network = entry.network
                return [
                    network.ssid, network.bssid, "\(Int((network.signalStrength * 100).rounded())) %", network.isSecure ? "yes" : "no",
                    network.interface, joined.contains(network.bssid) ? "joined" : "-",
                    entry.helper.map { "\($0) (\(network.confidence))" } ?? "-",
                ]
            }
            print(TextTable.render(header: ["SSID", "BSSID", "SIGNAL", "SECURE", "INTERFACE", "JOINED", "HELPER"], rows: rows))
            if !report.helpersSilent.isEmpty { print("no answer from: \(report.helpersSilent.joined(separator: ", "))") }
        }
    }

    /// Whether `error` says netextd cannot be reached (connecting wraps it in a `CommandFailure`).
    static func isDaemonUnavailable(_ error: any Error) -> Bool {
        (error as? CommandFailure)?.error.code == .daemonUnavailable || (error as? NetExtError)?.code == .daemonUnavailable
    }

    /// The scan list straight from the Wi-Fi service, unclaimed.
    static func direct(interface: String?) async throws -> HotspotListReport {
        let service = try await HotspotConfigurationManager.shared().service
        let scan = try service.scanAndJoined(interface: interface)
        return HotspotListReport(
            service: service.name, scanList: HotspotScanList(scan: scan.networks.map { HotspotNetwork($0) }, answers: []),
            joinedBSSIDs: scan.joined.map(\.bssid))
    }
}

/// Hotspot configuration errors on stderr with their exit code: 3 invalid, 5 the service's.
func reportingHotspotFailures(_ body: () async throws -> Void) async throws {
    do {
        try await reportingFailures(body)
    } catch let error as HotspotConfigurationError {
        StandardStreams.error(Data(("netext: \(error)\n").utf8))
        switch error {
        case .systemConfiguration, .internal, .alreadyAssociated, .joinOnceNotSupported: throw ExitCode(5)
        default: throw ExitCode(3)
        }
    }
}
