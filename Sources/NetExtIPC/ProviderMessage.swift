import Foundation
import NetExtCore

/// Messages between netextd and a provider process over their socketpair (descriptor 3 in the
/// provider), framed as the control protocol. On the wire: `{"type": "...", ...fields}`.
public enum ProviderMessage: Sendable, Hashable {
    /// Provider → daemon, first message: who it is and which protocol version it speaks.
    case hello(bundleIdentifier: String, version: Int)
    /// Daemon → provider: start with this configuration and these options.
    case start(ProviderStart)
    /// Provider → daemon: `startTunnel` returned.
    case started
    /// Provider → daemon: `startTunnel` threw, or the provider cancelled itself
    /// (`cancelTunnelWithError`).
    case failed(NetExtError)
    /// Daemon → provider: stop, with Apple's stop reason.
    case stop(reason: ProviderStopReason)
    /// Provider → daemon: `stopTunnel` returned; the provider exits next.
    case stopped
    /// Provider → daemon: `setTunnelNetworkSettings` (nil clears them).
    case setNetworkSettings(PacketTunnelNetworkSettings?)
    /// Daemon → provider: the settings are applied; for non-nil settings the TUN descriptor was
    /// sent on descriptor 4 just before this message.
    case networkSettingsApplied(interface: String, mtu: Int)
    /// Daemon → provider: the settings were refused (nothing of them stays applied).
    case networkSettingsRefused(NetExtError)
    /// Transparent proxy → daemon: its network rules (`setTunnelNetworkSettings` with
    /// `NETransparentProxyNetworkSettings`; nil removes them). Answered `networkSettingsApplied`
    /// (no interface) or `networkSettingsRefused`.
    case setTransparentProxySettings(TransparentProxyNetworkSettings?)
    /// Provider → daemon: `reasserting` changed (the tunnel is reconnecting, or back).
    case reasserting(Bool)
    /// Provider → daemon: what the provider knows of its connection (endpoint, handshakes), sent
    /// whenever it changes (`reportTunnelStatistics`); `netext status` shows the latest.
    case tunnelStatistics(TunnelStatistics)
    /// netextd → provider: an app's message (`sendProviderMessage`), to be answered with
    /// `appMessageReply` carrying the same `id`.
    case appMessage(id: Int, data: Data)
    /// provider → netextd: the answer of `handleAppMessage` (nil = no answer).
    case appMessageReply(id: Int, data: Data?)
    /// netextd → filter control provider: a flow the data provider answered `needRules` for
    /// (data providers get their flows on the flow channel, `FlowChannelCodec`).
    case newFlow(FilterFlow)
    /// filter control provider → netextd: its verdict for a flow the data provider sent it
    /// (`needRules`).
    case controlVerdict(flowID: UInt64, verdict: FilterControlVerdict)
    /// filter control provider → netextd: `notifyRulesChanged()`; netextd → filter data
    /// provider: `handleRulesChanged()` (answered with `rulesApplied`).
    case rulesChanged
    /// filter data provider → netextd: `handleRulesChanged()` returned; flows are asked again.
    case rulesApplied
    /// netextd → URL filter control provider: call `fetchPrefilter()`; answered with
    /// `prefilterFetched` carrying the same `id`.
    case fetchPrefilter(id: Int)
    /// URL filter control provider → netextd: the prefilter (nil: keep the current one), or the
    /// error `fetchPrefilter()` threw.
    case prefilterFetched(id: Int, prefilter: URLFilterPrefilter?, error: NetExtError?)
    /// Data provider → netextd: decide these flows in the kernel (`FilterSettings`); nil removes
    /// earlier settings. Answered `filterSettingsApplied` or `filterSettingsRefused`.
    case applyFilterSettings(FilterSettings?)
    case filterSettingsApplied
    case filterSettingsRefused(NetExtError)
    /// netextd → a hotspot helper: a command about a network (or the scan list) to answer.
    case hotspotCommand(HotspotHelperCommand)
    /// A hotspot helper → netextd: the answer to the command of the same ID.
    case hotspotResponse(HotspotHelperResponse)
}

/// What a provider needs to start: its configuration and the start options.
public struct ProviderStart: Sendable, Hashable, Codable {
    public var configuration: Configuration
    public var options: [String: JSONValue]
    /// The password, from the start options or netextd's secret store; never logged.
    public var password: String?
    public init(configuration: Configuration, options: [String: JSONValue], password: String?) {
        self.configuration = configuration
        self.options = options
        self.password = password
    }
}

extension ProviderMessage: Codable {
    private enum CodingKeys: String, CodingKey { case type, bundleIdentifier, version, start, error, reason, settings, interface, mtu, value, id, data, flow, flowID, verdict, prefilter, filterSettings, statistics, proxySettings, command, response }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "hello":
            self = .hello(
                bundleIdentifier: try container.decode(String.self, forKey: .bundleIdentifier),
                version: try container.decode(Int.self, forKey: .version))
        case "start": self = .start(try container.decode(ProviderStart.self, forKey: .start))
        case "started": self = .started
        case "failed": self = .failed(try container.decode(NetExtError.self, forKey: .error))
        case "stop": self = .stop(reason: try container.decode(ProviderStopReason.self, forKey: .reason))
        case "stopped": self = .stopped
        case "setNetworkSettings": self = .setNetworkSettings(try container.decodeIfPresent(PacketTunnelNetworkSettings.self, forKey: .settings))
        case "networkSettingsApplied":
            self = .networkSettingsApplied(interface: try container.decode(String.self, forKey: .interface), mtu: try container.decode(Int.self, forKey: .mtu))
        case "networkSettingsRefused": self = .networkSettingsRefused(try container.decode(NetExtError.self, forKey: .error))
        case "setTransparentProxySettings": self = .setTransparentProxySettings(try container.decodeIfPresent(TransparentProxyNetworkSettings.self, forKey: .proxySettings))
        case "reasserting": self = .reasserting(try container.decode(Bool.self, forKey: .value))
        case "tunnelStatistics": self = .tunnelStatistics(try container.decode(TunnelStatistics.self, forKey: .statistics))
        case "appMessage": self = .appMessage(id: try container.decode(Int.self, forKey: .id), data: try container.decode(Data.self, forKey: .data))
        case "appMessageReply": self = .appMessageReply(id: try container.decode(Int.self, forKey: .id), data: try container.decodeIfPresent(Data.self, forKey: .data))
        case "newFlow": self = .newFlow(try container.decode(FilterFlow.self, forKey: .flow))
        case "controlVerdict":
            self = .controlVerdict(flowID: try container.decode(UInt64.self, forKey: .flowID), verdict: try container.decode(FilterControlVerdict.self, forKey: .verdict))
        case "rulesChanged": self = .rulesChanged
        case "rulesApplied": self = .rulesApplied
        case "fetchPrefilter": self = .fetchPrefilter(id: try container.decode(Int.self, forKey: .id))
        case "prefilterFetched":
            self = .prefilterFetched(
                id: try container.decode(Int.self, forKey: .id), prefilter: try container.decodeIfPresent(URLFilterPrefilter.self, forKey: .prefilter),
                error: try container.decodeIfPresent(NetExtError.self, forKey: .error))
        case "applyFilterSettings": self = .applyFilterSettings(try container.decodeIfPresent(FilterSettings.self, forKey: .filterSettings))
        case "filterSettingsApplied": self = .filterSettingsApplied
        case "filterSettingsRefused": self = .filterSettingsRefused(try container.decode(NetExtError.self, forKey: .error))
        case "hotspotCommand": self = .hotspotCommand(try container.decode(HotspotHelperCommand.self, forKey: .command))
        case "hotspotResponse": self = .hotspotResponse(try container.decode(HotspotHelperResponse.self, forKey: .response))
        default: throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown provider message '\(type)'")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .hello(let bundleIdentifier, let version):
            try container.encode("hello", forKey: .type)
            try container.encode(bundleIdentifier, forKey: .bundleIdentifier)
            try container.encode(version, forKey: .version)
        case .start(let start):
            try container.encode("start", forKey: .type)
            try container.encode(start, forKey: .start)
        case .started: try container.encode("started", forKey: .type)
        case .failed(let error):
            try container.encode("failed", forKey: .type)
            try container.encode(error, forKey: .error)
        case .stop(let reason):
            try container.encode("stop", forKey: .type)
            try container.encode(reason, forKey: .reason)
        case .stopped: try container.encode("stopped", forKey: .type)
        case .setNetworkSettings(let settings):
            try container.encode("setNetworkSettings", forKey: .type)
            try container.encodeIfPresent(settings, forKey: .settings)
        case .networkSettingsApplied(let interface, let mtu):
            try container.encode("networkSettingsApplied", forKey: .type)
            try container.encode(interface, forKey: .interface)
            try container.encode(mtu, forKey: .mtu)
        case .networkSettingsRefused(let error):
            try container.encode("networkSettingsRefused", forKey: .type)
            try container.encode(error, forKey: .error)
        case .setTransparentProxySettings(let settings):
            try container.encode("setTransparentProxySettings", forKey: .type)
            try container.encodeIfPresent(settings, forKey: .proxySettings)
        case .reasserting(let value):
            try container.encode("reasserting", forKey: .type)
            try container.encode(value, forKey: .value)
        case .tunnelStatistics(let statistics):
            try container.encode("tunnelStatistics", forKey: .type)
            try container.encode(statistics, forKey: .statistics)
        case .appMessage(let id, let data):
            try container.encode("appMessage", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encode(data, forKey: .data)
        case .appMessageReply(let id, let data):
            try container.encode("appMessageReply", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encodeIfPresent(data, forKey: .data)
        case .newFlow(let flow):
            try container.encode("newFlow", forKey: .type)
            try container.encode(flow, forKey: .flow)
        case .controlVerdict(let flowID, let verdict):
            try container.encode("controlVerdict", forKey: .type)
            try container.encode(flowID, forKey: .flowID)
            try container.encode(verdict, forKey: .verdict)
        case .rulesChanged: try container.encode("rulesChanged", forKey: .type)
        case .rulesApplied: try container.encode("rulesApplied", forKey: .type)
        case .fetchPrefilter(let id):
            try container.encode("fetchPrefilter", forKey: .type)
            try container.encode(id, forKey: .id)
        case .prefilterFetched(let id, let prefilter, let error):
            try container.encode("prefilterFetched", forKey: .type)
            try container.encode(id, forKey: .id)
            try container.encodeIfPresent(prefilter, forKey: .prefilter)
            try container.encodeIfPresent(error, forKey: .error)
        case .applyFilterSettings(let settings):
            try container.encode("applyFilterSettings", forKey: .type)
            try container.encodeIfPresent(settings, forKey: .filterSettings)
        case .filterSettingsApplied: try container.encode("filterSettingsApplied", forKey: .type)
        case .filterSettingsRefused(let error):
            try container.encode("filterSettingsRefused", forKey: .type)
            try container.encode(error, forKey: .error)
        case .hotspotCommand(let command):
            try container.encode("hotspotCommand", forKey: .type)
            try container.encode(command, forKey: .command)
        case .hotspotResponse(let response):
            try container.encode("hotspotResponse", forKey: .type)
            try container.encode(response, forKey: .response)
        }
    }
}

/// The descriptors a provider inherits from netextd (docs/providers.md).
public enum ProviderDescriptors {
    /// The socketpair end that carries provider-protocol frames.
    public static let control: Int32 = 3
    /// The socketpair end on which netextd passes file descriptors (the TUN device) with
    /// SCM_RIGHTS, and, for a filter data provider, the flow channel.
    public static let descriptorPassing: Int32 = 4
}
