import ArgumentParser
import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// `netext hotspot …`: captive portals and hotspots.
struct HotspotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotspot",
        abstract: "Captive portals and Wi-Fi networks: is this network holding traffic until someone logs in? Which networks to join?",
        subcommands: [
            HotspotStatusCommand.self, HotspotDetectCommand.self, HotspotAllowLoginCommand.self, HotspotOpenCommand.self, HotspotListCommand.self,
            HotspotConfigureCommand.self, HotspotConfiguredCommand.self, HotspotRemoveCommand.self,
        ])
}

struct HotspotDetectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect", abstract: "Ask the network about its captive portal and check whether traffic gets through.",
        discussion: """
            netextd asks the network's DHCP server for its captive portal announcement (DHCPINFORM, option 114, RFC 8910), \
            reads the captive portal API it names (RFC 8908, over HTTPS), and runs the connectivity check — netextd's \
            (--connectivity-check-url) or the one given here (root or the admin group) — on the interface. \
            Exits 0 when the network is open, 2 when it is captive, 11 when nothing could tell.
            """)
    @OptionGroup var options: ClientOptions
    @Option(help: "The interface (default: the one the default route leaves by).") var interface: String?
    @Option(help: "A connectivity check of your own: a plain http URL whose real answer you know.") var probeUrl: String?
    @Option(help: "What the real answer's body starts with (default: the real answer is 204 No Content).") var probeResponse: String?

    func run() async throws {
        var verdict = CaptivePortalDetection.Verdict.unknown
        try await reportingFailures {
            if probeResponse != nil && probeUrl == nil { throw UsageError("--probe-response goes with --probe-url") }
            let detection = try await options.withClient { client in
                try await client.call(DetectCaptivePortal(interface: interface, probeURL: probeUrl, probeResponse: probeResponse))
            }
            verdict = detection.verdict
            if options.json {
                try options.printJSON(detection)
            } else {
                for line in HotspotText.lines(detection) { print(line) }
            }
        }
        switch verdict {
        case .open: return
        case .captive: throw ExitCode(2)
        case .unknown: throw ExitCode(11)
        }
    }
}

struct HotspotStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "What netextd last found about a captive portal on the default route's interface.",
        discussion: "netextd checks by itself on network changes when started with --captive-portal-detection; detections asked for with netext hotspot detect (without --probe-url) count too.")
    @OptionGroup var options: ClientOptions

    func run() async throws {
        try await reportingFailures {
            let status = try await options.withClient { client in try await client.call(GetCaptivePortalStatus()) }
            if options.json { try options.printJSON(status); return }
            print("monitoring: \(status.monitoring ? "on (every network change)" : "off (netextd --captive-portal-detection turns it on)")")
            if let helpers = status.helpers { for line in HotspotText.lines(helpers) { print(line) } }
            guard let last = status.last, let checkedAt = status.checkedAt else {
                print("no detection yet")
                return
            }
            print("checked: \(Int(Date().timeIntervalSince(checkedAt))) s ago")
            for line in HotspotText.lines(last) { print(line) }
        }
    }
}

struct HotspotAllowLoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "allow-login", abstract: "Let one user's programs reach a captive portal past the kill switch for a while.",
        discussion: """
            With a kill switch on, nothing leaves outside the tunnel — and behind a captive portal the tunnel cannot \
            come up until someone logs in. This lets USER's programs (a browser run as that user) reach the network on \
            the interface directly for --seconds (default 300, at most 3600); everything else stays blocked. \
            --seconds 0 ends it. Root or netextd's admin group.
            """)
    @OptionGroup var options: ClientOptions
    @Option(help: "The user whose programs log in (a name or uid; not root).") var user: String
    @Option(help: "The interface (default: the one the default route leaves by).") var interface: String?
    @Option(help: "How long, in seconds (0 ends it).") var seconds = 300

    func run() async throws {
        try await reportingFailures {
            let grant = try await options.withClient { client in
                try await client.call(AllowPortalLogin(user: user, interface: interface, seconds: seconds))
            }
            if options.json { try options.printJSON(grant); return }
            if grant.seconds == 0 {
                print(grant.ended ? "portal login for \(grant.user) (uid \(grant.uid)) ended" : "no portal login was in force for \(grant.user)")
            } else {
                print("\(grant.user) (uid \(grant.uid)) may reach \(grant.interface) directly for \(grant.seconds) s")
                if !grant.guardInForce { print("note: no kill switch is in force, so nothing was blocked; the grant applies if one comes into force") }
            }
        }
    }
}

struct HotspotOpenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open", abstract: "Open the hotspot helper that asked for a person (it answered uiRequired): netextd sends it presentUI.",
        discussion: "netext hotspot status shows 'helper session: awaitingUser' while a helper waits. Root or netextd's admin group.")
    @OptionGroup var options: ClientOptions
    @Option(help: "The helper's bundle identifier (default: the chosen helper).") var helper: String?

    func run() async throws {
        try await reportingFailures {
            let status = try await options.withClient { client in try await client.call(OpenHotspotHelper(helper: helper)) }
            if options.json { try options.printJSON(status); return }
            for line in HotspotText.lines(status) { print(line) }
        }
    }
}

enum HotspotText {
    /// What `netext hotspot status` prints about the hotspot helpers: one line a helper, then
    /// the network's session.
    static func lines(_ status: HotspotHelperStatus) -> [String] {
        var lines = status.helpers.map { helper in
            var line = "helper: \(helper.bundleIdentifier) (user \(helper.user)) \(helper.ready ? "ready" : "not ready")"
            if helper.restarts > 0 { line += ", restarted \(helper.restarts) times" }
            if let error = helper.lastError { line += "; last: \(error)" }
            return line
        }
        guard let state = status.state else { return lines }
        let session: String
        switch state {
        case .failed(let reason): session = "failed: \(reason)"
        default: session = "\(state)"
        }
        var line = "helper session: \(session)"
        if let interface = status.interface { line += " on \(interface)" }
        if let chosen = status.chosen { line += ", chosen helper \(chosen)" }
        lines.append(line)
        return lines
    }

    /// What `netext hotspot detect` prints: one line a step, then the verdict.
    static func lines(_ detection: CaptivePortalDetection) -> [String] {
        var lines = ["interface: \(detection.interface)"]
        if let announcement = detection.announcement {
            lines.append("announcement (\(detection.announcementSource ?? "DHCP option 114")): \(announcement == .unrestricted ? "no captive portal (\(announcement))" : "captive portal API at \(announcement)")")
        } else {
            lines.append("announcement (DHCP option 114, DHCPv6 option 103, Router Advertisement option 37): none — \(detection.announcementProblem ?? "not asked")")
        }
        if let api = detection.api {
            var parts = ["captive=\(api.isCaptive ? "yes" : "no")"]
            if let url = api.userPortalURL { parts.append("user-portal-url=\(url.absoluteString)") }
            if let url = api.venueInfoURL { parts.append("venue-info-url=\(url.absoluteString)") }
            if let seconds = api.secondsRemaining { parts.append("seconds-remaining=\(seconds)") }
            if let bytes = api.bytesRemaining { parts.append("bytes-remaining=\(bytes)") }
            if api.canExtendSession { parts.append("can-extend-session=yes") }
            lines.append("captive portal API: " + parts.joined(separator: " "))
        } else if let problem = detection.apiProblem {
            lines.append("captive portal API: none — \(problem)")
        }
        if let probe = detection.probe {
            switch probe.verdict {
            case .online: lines.append("connectivity check \(probe.url.absoluteString): \(probe.status), the real answer")
            case .captive(let redirect):
                lines.append("connectivity check \(probe.url.absoluteString): \(probe.status), \(redirect.map { "redirected to \($0.absoluteString)" } ?? "not the real answer")")
            }
        } else if let problem = detection.probeProblem {
            lines.append("connectivity check: failed — \(problem)")
        } else {
            lines.append("connectivity check: none configured")
        }
        switch detection.verdict {
        case .captive: lines.append("verdict: captive\(detection.loginURL.map { " — log in at \($0.absoluteString)" } ?? "")")
        case .open: lines.append("verdict: open")
        case .unknown: lines.append("verdict: unknown")
        }
        return lines
    }
}
