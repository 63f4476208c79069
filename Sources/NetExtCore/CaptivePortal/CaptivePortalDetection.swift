import Foundation

/// What `netext hotspot detect` found on one interface: the network's announcement (DHCP option
/// 114), the captive portal API's answer (RFC 8908), the connectivity check's, and the verdict
/// drawn from them. Each step that failed says why, in its `…Problem`.
public struct CaptivePortalDetection: Sendable, Hashable, Codable {
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// Traffic is held until someone logs in (`loginURL`).
        case captive
        /// The network lets traffic through.
        case open
        /// Nothing said either way (no announcement, no API, no probe configured or answered).
        case unknown
    }

    public struct ProbeResult: Sendable, Hashable, Codable {
        public var url: URL
        public var status: Int
        public var verdict: ConnectivityProbe.Verdict

        public init(url: URL, status: Int, verdict: ConnectivityProbe.Verdict) {
            self.url = url
            self.status = status
            self.verdict = verdict
        }
    }

    public var interface: String
    public var announcement: CaptivePortalAnnouncement?
    public var announcementProblem: String?
    /// Where the announcement came from: `DHCP option 114` or `DHCPv6 option 103`.
    public var announcementSource: String?
    public var api: CaptivePortalAPIStatus?
    public var apiProblem: String?
    public var probe: ProbeResult?
    public var probeProblem: String?
    public var verdict: Verdict
    /// Where a person logs in, when captive and known.
    public var loginURL: URL?

    public init(
        interface: String, announcement: CaptivePortalAnnouncement? = nil, announcementProblem: String? = nil, api: CaptivePortalAPIStatus? = nil,
        apiProblem: String? = nil, probe: ProbeResult? = nil, probeProblem: String? = nil, announcementSource: String? = nil
    ) {
        self.announcementSource = announcementSource
        self.interface = interface
        self.announcement = announcement
        self.announcementProblem = announcementProblem
        self.api = api
        self.apiProblem = apiProblem
        self.probe = probe
        self.probeProblem = probeProblem
        (verdict, loginURL) = Self.decide(announcement: announcement, api: api, probe: probe?.verdict)
    }

    /// The verdict: the API's word first (the portal speaking for itself, RFC 8908 §5), then the
    /// probe's, then an announcement of no portal; otherwise unknown.
    public static func decide(announcement: CaptivePortalAnnouncement?, api: CaptivePortalAPIStatus?, probe: ConnectivityProbe.Verdict?) -> (Verdict, URL?) {
        if let api {
            guard api.isCaptive else { return (.open, nil) }
            if case .captive(let redirect)? = probe, api.userPortalURL == nil { return (.captive, redirect) }
            return (.captive, api.userPortalURL)
        }
        switch probe {
        case .online?: return (.open, nil)
        case .captive(let redirect)?: return (.captive, redirect)
        case nil: return announcement == .unrestricted ? (.open, nil) : (.unknown, nil)
        }
    }
}
