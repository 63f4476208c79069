/// A pattern over the name of a systemd unit (the last component of a cgroup's path, such as
/// `app-flatpak-org.mozilla.firefox-4711.scope`): `*` stands for any run of bytes, `?` for one
/// byte (unit names are ASCII), everything else for itself. Names are compared after systemd's
/// `\xNN` escapes are undone (systemd-escape(1): an application ID's `-` appears as `\x2d`).
public struct UnitNamePattern: Sendable, Hashable, CheckedString {
    public let pattern: String
    private let parts: [UInt8]

    /// Refuses an empty pattern, a `/` (a pattern names one unit, not a path) and one longer
    /// than a unit name may be (255 bytes).
    public init(_ pattern: String) throws(NetExtError) {
        if pattern.isEmpty { throw .invalid("a unit name pattern must not be empty") }
        if pattern.contains("/") { throw .invalid("'\(pattern)' is not a unit name pattern: it contains '/' (give the unit's name, such as app-org.example.App-*.scope)") }
        if pattern.utf8.count > 255 { throw .invalid("'\(pattern)' is longer than a unit name may be (255 bytes)") }
        self.pattern = pattern
        parts = Array(pattern.utf8)
    }

    public var description: String { pattern }


    /// Whether `unitName` (escaped or not) matches.
    public func matches(_ unitName: String) -> Bool {
        Self.glob(parts[...], Array(Self.unescape(unitName).utf8)[...])
    }

    /// The patterns an app's own units have by the conventions of systemd's desktop integration
    /// (`app[-<launcher>]-<ID>[@<random>].service`, `app[-<launcher>]-<ID>-<random>.scope`,
    /// Flatpak's launcher being `flatpak`) — what GNOME, KDE and Flatpak create when they start
    /// an app.
    public static func systemdAppUnits(of app: AppIdentifier) -> [UnitNamePattern] {
        let id = app.rawValue
        return ["app-\(id)-*.scope", "app-*-\(id)-*.scope", "app-\(id)@*.service", "app-*-\(id)@*.service", "app-\(id).service", "app-*-\(id).service"]
            .compactMap { try? UnitNamePattern($0) }
    }

    /// systemd's unit-name escapes undone: `\xNN` becomes the byte it names.
    static func unescape(_ name: String) -> String {
        guard name.contains("\\x") else { return name }
        var bytes: [UInt8] = []
        let input = Array(name.utf8)
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "\\"), index + 3 < input.count, input[index + 1] == UInt8(ascii: "x"),
               let high = HexDigit.value(input[index + 2]), let low = HexDigit.value(input[index + 3]) {
                bytes.append(high << 4 | low)
                index += 4
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }


    /// Iterative glob with one backtracking point per `*` (linear in practice, never exponential).
    static func glob(_ pattern: ArraySlice<UInt8>, _ text: ArraySlice<UInt8>) -> Bool {
        var p = pattern.startIndex, t = text.startIndex
        var star: ArraySlice<UInt8>.Index? = nil, resume = text.startIndex
        while t < text.endIndex {
            if p < pattern.endIndex, pattern[p] == UInt8(ascii: "*") {
                star = p
                resume = t
                p += 1
            } else if p < pattern.endIndex, pattern[p] == UInt8(ascii: "?") || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if let starAt = star {
                p = starAt + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.endIndex, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.endIndex
    }
}
