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

    /// The exposition text: `PREFIX_NAME_total{LABELS} VALUE` per counter, then `extra` lines.
    func render(prefix: String, extra: [String] = []) -> String {
        let lines = counts.withLock { counts in
            counts.sorted { $0.key < $1.key }.map { key, value in
                let parts = key.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
                let labels = parts.count > 1 && !parts[1].isEmpty ? "{\(parts[1])}" : ""
                return "\(prefix)_\(parts[0])_total\(labels) \(value)"
            }
        }
        return (lines + extra).joined(separator: "\n") + "\n"
    }
}
