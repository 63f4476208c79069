/// Why a captive portal announcement, API answer or DHCP message was refused: a sentence that
/// names the key, option or offset at fault.
public struct CaptivePortalError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
