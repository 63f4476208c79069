/// Why a hotspot configuration was refused or could not be applied, after
/// NEHotspotConfigurationError: Apple's codes, each case with what was wrong.
public enum HotspotConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    case invalid(String)
    case invalidSSID(String)
    case invalidWPAPassphrase(String)
    case invalidWEPPassphrase(String)
    case invalidEAPSettings(String)
    case invalidHS20Settings(String)
    case invalidHS20DomainName(String)
    case invalidSSIDPrefix(String)
    /// The Wi-Fi service refused or failed (its own words follow).
    case systemConfiguration(String)
    /// The network is already joined with this configuration.
    case alreadyAssociated(String)
    /// `joinOnce` asked for a network not in range now.
    case joinOnceNotSupported(String)
    case `internal`(String)

    /// Apple's `NEHotspotConfigurationError` raw value for this case.
    public var code: Int {
        switch self {
        case .invalid: 0
        case .invalidSSID: 1
        case .invalidWPAPassphrase: 2
        case .invalidWEPPassphrase: 3
        case .invalidEAPSettings: 4
        case .invalidHS20Settings: 5
        case .invalidHS20DomainName: 6
        case .internal: 8
        case .systemConfiguration: 10
        case .joinOnceNotSupported: 12
        case .alreadyAssociated: 13
        case .invalidSSIDPrefix: 15
        }
    }

    public var description: String {
        switch self {
        case .invalid(let detail), .invalidSSID(let detail), .invalidWPAPassphrase(let detail), .invalidWEPPassphrase(let detail),
            .invalidEAPSettings(let detail), .invalidHS20Settings(let detail), .invalidHS20DomainName(let detail),
            .invalidSSIDPrefix(let detail), .systemConfiguration(let detail), .alreadyAssociated(let detail),
            .joinOnceNotSupported(let detail), .internal(let detail):
            detail
        }
    }
}
