import Foundation
import NetExtCore

// The methods on profiles, providers and the filters (docs/control-protocol.md, "Messages").

/// Installs a configuration profile (XML or binary property list).
public struct InstallProfile: ControlMethod {
    public typealias Result = ProfileSummary
    public static let name = "installProfile"
    public static let modifiesState = true
    /// The profile file's bytes, base64 on the wire.
    public var data: Data
    public init(data: Data) { self.data = data }
}

/// Removes an installed profile and the configurations it installed.
public struct RemoveProfile: ControlMethod {
    public typealias Result = ProfileRemoval
    public static let name = "removeProfile"
    public static let modifiesState = true
    public var identifier: String
    public init(identifier: String) { self.identifier = identifier }
}

/// The profiles the caller installed (root: all).
public struct ListProfiles: ControlMethod {
    public typealias Result = ProfileList
    public static let name = "listProfiles"
    public init() {}
}

/// The provider manifests netextd knows, and the files it refused.
public struct ListProviders: ControlMethod {
    public typealias Result = ProviderList
    public static let name = "listProviders"
    public init() {}
}

/// The content filter's state and counters (anyone may read them).
public struct GetFilterStatus: ControlMethod {
    public typealias Result = FilterStatus
    public static let name = "getFilterStatus"
    public init() {}
}

/// The content filter's latest verdicts, oldest first (root or the admin group only: the
/// entries name other users' destinations).
public struct GetFilterLog: ControlMethod {
    public typealias Result = FilterLogResult
    public static let name = "getFilterLog"
    public var limit: Int
    public init(limit: Int) { self.limit = limit }
}

/// The URL filter's verdict for a URL (anyone may ask; the answer names only that URL's verdict).
public struct GetURLFilterVerdict: ControlMethod {
    public typealias Result = URLFilterVerdictResult
    public static let name = "urlFilterVerdict"
    public var url: String
    public init(url: String) { self.url = url }
}

/// The URL filter's state and counters.
public struct GetURLFilterStatus: ControlMethod {
    public typealias Result = URLFilterStatus
    public static let name = "getURLFilterStatus"
    public init() {}
}

/// The system DNS settings' state and counters.
public struct GetDNSSettingsStatus: ControlMethod {
    public typealias Result = DNSSettingsStatus
    public static let name = "getDNSSettingsStatus"
    public init() {}
}

/// Captive portal detection on one interface (`netext hotspot detect`): the network's
/// announcement (DHCP option 114), its captive portal API, and the connectivity check. A request
/// that names its own check (`probeURL`) makes netextd send traffic where the caller says, so it
/// needs root or the admin group; one without uses netextd's configured check.
public struct DetectCaptivePortal: ControlMethod {
    public typealias Result = CaptivePortalDetection
    public static let name = "detectCaptivePortal"
    /// The interface; nil: the one the default route leaves by.
    public var interface: String?
    public var probeURL: String?
    public var probeResponse: String?
    public init(interface: String? = nil, probeURL: String? = nil, probeResponse: String? = nil) {
        self.interface = interface
        self.probeURL = probeURL
        self.probeResponse = probeResponse
    }
}

/// What netextd's captive portal monitor last found (`netext hotspot status`).
public struct GetCaptivePortalStatus: ControlMethod {
    public typealias Result = CaptivePortalStatus
    public static let name = "getCaptivePortalStatus"
    public init() {}
}

/// The Wi-Fi scan list with the hotspot helpers' claims (`netext hotspot list`): netextd asks
/// the Wi-Fi service, then each running helper `filterScanList`. Anyone may read it.
public struct GetHotspotList: ControlMethod {
    public typealias Result = HotspotListReport
    public static let name = "getHotspotList"
    /// nil: every Wi-Fi interface.
    public var interface: String?
    public init(interface: String? = nil) { self.interface = interface }
}

/// A person opens the hotspot helper that asked for them (`uiRequired`): netextd sends it
/// `presentUI` (`netext hotspot open`). Root or the admin group.
public struct OpenHotspotHelper: ControlMethod {
    public typealias Result = HotspotHelperStatus
    public static let name = "openHotspotHelper"
    public static let modifiesState = true
    /// nil: the chosen helper.
    public var helper: String?
    public init(helper: String? = nil) { self.helper = helper }
}

/// Lets one user's programs reach one interface directly for a while, past the kill switch, to
/// log in to a captive portal (`netext hotspot allow-login`); `seconds` 0 ends it. Root or the
/// admin group.
public struct AllowPortalLogin: ControlMethod {
    public typealias Result = PortalLoginGrant
    public static let name = "allowPortalLogin"
    public static let modifiesState = true
    /// A user name or numeric id.
    public var user: String
    /// nil: the default route's interface.
    public var interface: String?
    public var seconds: Int
    public init(user: String, interface: String? = nil, seconds: Int) {
        self.user = user
        self.interface = interface
        self.seconds = seconds
    }
}

/// Every method of the control protocol, by wire name: how a request's `params` are decoded.
public enum ControlMethods {
    public static let all: [String: any ControlMethod.Type] = Dictionary(uniqueKeysWithValues: list.map { ($0.name, $0) })

    static let list: [any ControlMethod.Type] = [
        Hello.self, ListConfigurations.self, LoadConfiguration.self, SaveConfiguration.self, RemoveConfiguration.self,
        StartConnection.self, StopConnection.self, GetStatus.self, Subscribe.self, SendProviderMessage.self,
        InstallProfile.self, RemoveProfile.self, ListProfiles.self, ListProviders.self,
        GetFilterStatus.self, GetFilterLog.self, GetURLFilterVerdict.self, GetURLFilterStatus.self,
        GetDNSSettingsStatus.self, DetectCaptivePortal.self, GetCaptivePortalStatus.self, AllowPortalLogin.self, GetHotspotList.self, OpenHotspotHelper.self,
        PlaceInApp.self, ListApps.self,
    ]
}
