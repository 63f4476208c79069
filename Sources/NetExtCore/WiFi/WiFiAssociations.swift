/// A change in which network a Wi-Fi interface has joined.
public enum WiFiAssociationChange: Sendable, Hashable, CustomStringConvertible {
    /// The interface joined `network` (nothing before, or another network: `left` came first).
    case joined(WiFiScanResult)
    /// The interface left the network named `ssid`.
    case left(interface: String, ssid: String)

    /// The interface concerned.
    public var interface: String {
        switch self {
        case .joined(let network): network.interface
        case .left(let interface, _): interface
        }
    }

    public var description: String {
        switch self {
        case .joined(let network): "\(network.interface) joined \"\(network.ssid)\""
        case .left(let interface, let ssid): "\(interface) left \"\(ssid)\""
        }
    }
}

/// The networks the Wi-Fi interfaces have joined, as last read, and what changed since: a pure
/// record that the daemon's association monitor feeds each reading. A move to another access
/// point of the same network (roaming), or a signal change, is no change: the network is the SSID.
public struct WiFiAssociations: Sendable, Equatable {
    /// The joined network of each interface that has one.
    public private(set) var joined: [String: WiFiScanResult] = [:]

    public init() {}

    /// Takes a reading (every Wi-Fi interface's joined network; those with none absent) and
    /// returns what changed, interfaces in name order, each interface's `left` before its `joined`.
    public mutating func update(_ reading: [String: WiFiScanResult]) -> [WiFiAssociationChange] {
        var changes: [WiFiAssociationChange] = []
        for interface in Set(joined.keys).union(reading.keys).sorted() {
            let before = joined[interface], now = reading[interface]
            if let before, before.ssid != now?.ssid {
                changes.append(.left(interface: interface, ssid: before.ssid))
            }
            if let now, before?.ssid != now.ssid {
                changes.append(.joined(now))
            }
        }
        joined = reading
        return changes
    }
}
