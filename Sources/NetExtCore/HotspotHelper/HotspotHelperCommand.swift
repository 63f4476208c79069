/// One command netextd sends a hotspot helper, shaped after NEHotspotHelperCommand: what to do
/// and about which network (or, for `filterScanList`, which networks). A helper answers each
/// with one ``HotspotHelperResponse`` carrying the command's `id`; an answer to a command no
/// longer awaited (a later one was sent, the network was left) is ignored.
public struct HotspotHelperCommand: Sendable, Hashable, Codable {
    /// NEHotspotHelperCommandType, in the order a network meets them.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// Claim networks of a scan list, with a confidence (and a password) for each.
        case filterScanList
        /// Say how sure the helper is that it can authenticate to the network just joined.
        case evaluate
        /// Authenticate to the network (the chosen helper only): log in to its portal.
        case authenticate
        /// The user opened the helper to finish authenticating (after `uiRequired`).
        case presentUI
        /// Keep the session alive, or say it has ended (`authenticationRequired`).
        case maintain
        /// Log off: the network is being left.
        case logoff
    }

    /// Unique within one netextd run; the answer carries it back.
    public var id: UInt64
    public var kind: Kind
    /// The network the command is about (every kind but `filterScanList`).
    public var network: HotspotNetwork?
    /// The networks to claim from (`filterScanList` only).
    public var networkList: [HotspotNetwork]

    public init(id: UInt64, kind: Kind, network: HotspotNetwork? = nil, networkList: [HotspotNetwork] = []) {
        self.id = id
        self.kind = kind
        self.network = network
        self.networkList = networkList
    }
}

/// A helper's answer to one command, shaped after NEHotspotHelperResponse.
public struct HotspotHelperResponse: Sendable, Hashable, Codable {
    /// NEHotspotHelperResult.
    public enum Result: String, Sendable, Hashable, Codable, CaseIterable {
        /// Done: evaluated, authenticated, maintained, logged off.
        case success
        /// It did not work, and trying again will not help.
        case failure
        /// A person has to finish it (a form the helper cannot fill): wait for `presentUI`.
        case uiRequired
        /// The helper does not handle this kind of command.
        case commandNotRecognized
        /// To `maintain`: the session has ended; authenticate again.
        case authenticationRequired
        /// The helper does not handle this network after all.
        case unsupportedNetwork
        /// It did not work this time; trying again may.
        case temporaryFailure
    }

    /// The command answered.
    public var commandID: UInt64
    public var result: Result
    /// To `evaluate`: the network with the helper's confidence set.
    public var network: HotspotNetwork?
    /// To `filterScanList`: the networks the helper claims, each with its confidence (and password).
    public var networkList: [HotspotNetwork]

    public init(commandID: UInt64, result: Result, network: HotspotNetwork? = nil, networkList: [HotspotNetwork] = []) {
        self.commandID = commandID
        self.result = result
        self.network = network
        self.networkList = networkList
    }
}

extension HotspotHelperCommand {
    /// A response to this command with `result` (Apple's `createResponse(_:)`); set its
    /// network or list before returning it.
    public func createResponse(_ result: HotspotHelperResponse.Result) -> HotspotHelperResponse {
        HotspotHelperResponse(commandID: id, result: result)
    }
}

extension HotspotHelperResponse {
    /// Sets the network the response is about: to an `evaluate`, the command's network with
    /// the helper's confidence set (Apple's `setNetwork(_:)`).
    public mutating func setNetwork(_ network: HotspotNetwork) { self.network = network }

    /// Sets the networks the helper annotates: to a `filterScanList`, the ones it can handle,
    /// each with a confidence and, where it knows it, a password (Apple's `setNetworkList(_:)`).
    public mutating func setNetworkList(_ networks: [HotspotNetwork]) { networkList = networks }
}
