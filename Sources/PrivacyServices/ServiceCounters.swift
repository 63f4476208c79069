import Synchronization

/// Counters of the issuer, gateway and relay (`GET /metrics`, Prometheus text); nothing in them
/// identifies a client, a credential or a target's content.
public final class ServiceCounters: Sendable {
    private let counts = Mutex([String: Int]())

    public init() {}

    /// Adds `amount` to a counter; `labels` is Prometheus label text such as `status="200"`.
    func add(_ name: String, labels: String = "", _ amount: Int = 1) { counts.withLock { $0[name + "|" + labels, default: 0] += amount } }

    func count(_ name: String, labels: String = "") { add(name, labels: labels) }

    func countRequest(endpoint: String, status: Int) { count("requests", labels: "endpoint=\"\(endpoint)\",status=\"\(status)\"") }

    public func value(_ name: String, labels: String = "") -> Int { counts.withLock { $0[name + "|" + labels] ?? 0 } }

    /// The exposition text (Prometheus text format 0.0.4): for each counter name its `# HELP`
    /// (from `defaultHelp`, else the name in words) and `# TYPE … counter`, then
    /// `PREFIX_NAME_total{LABELS} VALUE` per label set; then `extra` lines (which carry their own).
    func render(prefix: String, extra: [String] = []) -> String {
        let lines = counts.withLock { counts in
            var lines: [String] = []
            var described = Set<Substring>()
            for (key, value) in counts.sorted(by: { $0.key < $1.key }) {
                let parts = key.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
                let name = "\(prefix)_\(parts[0])_total"
                if described.insert(parts[0]).inserted {
                    lines.append("# HELP \(name) \(Self.defaultHelp[String(parts[0])] ?? parts[0].replacingOccurrences(of: "_", with: " ").capitalized + ".")")
                    lines.append("# TYPE \(name) counter")
                }
                let labels = parts.count > 1 && !parts[1].isEmpty ? "{\(parts[1])}" : ""
                lines.append("\(name)\(labels) \(value)")
            }
            return lines
        }
        return (lines + extra).joined(separator: "\n") + "\n"
    }

    /// Help for the counters every role keeps.
    static let defaultHelp = [
        "requests": "HTTP requests by endpoint and status.",
        "tokens_issued": "Privacy Pass tokens signed.",
        "rate_limited": "Issuance requests over their client's hourly limit.",
        "refused_malformed": "Issuance requests refused as malformed (unknown key, bad blinded message).",
        "refused_replay": "Issuance requests refused as replays.",
        "decapsulation_failed": "Oblivious HTTP requests the gateway could not decapsulate.",
        "forwarded": "Requests the gateway forwarded to a target.",
        "target_refused": "Requests for a target the gateway does not serve.",
        "relayed": "Requests the relay passed to the gateway.",
    ]
}
