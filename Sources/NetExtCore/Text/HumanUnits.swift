import Foundation

/// Quantities as status lines show them to people: durations the way `wg show` counts them,
/// byte counts in decimal units as network tools do.
public enum HumanUnits {
    /// "1 minute, 4 seconds": the two largest non-zero units, down to seconds.
    public static func duration(_ interval: TimeInterval) -> String {
        var seconds = max(0, Int(interval.rounded(.down)))
        let units: [(String, Int)] = [("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1)]
        var parts: [String] = []
        for (unit, size) in units where seconds >= size {
            let count = seconds / size
            seconds %= size
            parts.append("\(count) \(unit)\(count == 1 ? "" : "s")")
            if parts.count == 2 { break }
        }
        return parts.isEmpty ? "0 seconds" : parts.joined(separator: ", ")
    }

    /// "12 seconds ago"; "just now" under a second.
    public static func ago(_ interval: TimeInterval) -> String {
        interval < 1 ? "just now" : duration(interval) + " ago"
    }

    /// "1.2 MB", "340 kB", "17 B".
    public static func bytes(_ count: UInt64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}
