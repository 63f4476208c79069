/// Checks a Prometheus text exposition (format 0.0.4, as `GET /metrics` serves it): every sample
/// belongs to a family announced with `# HELP` and `# TYPE` before it; counters end in `_total`;
/// a summary or histogram has its `_sum` and `_count`; every value is a number.
public enum PrometheusExposition {
    /// What is wrong, one sentence each (empty: nothing).
    public static func problems(in text: String) -> [String] {
        var help = Set<String>(), types: [String: String] = [:], seen = Set<String>(), problems: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("# HELP ") {
                if let name = line.dropFirst(7).split(separator: " ").first { help.insert(String(name)) }
                continue
            }
            if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst(7).split(separator: " ")
                if parts.count == 2 { types[String(parts[0])] = String(parts[1]) } else { problems.append("malformed TYPE line: \(line)") }
                continue
            }
            if line.hasPrefix("#") { continue }
            let sample = line.prefix { $0 != "{" && $0 != " " }
            let valueText = line.split(separator: " ").last.map(String.init) ?? ""
            if Double(valueText) == nil && !["+Inf", "-Inf", "NaN"].contains(valueText) { problems.append("\(sample): value '\(valueText)' is not a number") }
            let family = family(of: String(sample), types: types)
            seen.insert(family)
            guard let type = types[family] else { problems.append("\(sample): no TYPE for \(family) before it"); continue }
            if !help.contains(family) { problems.append("\(family): no HELP") }
            if type == "counter" && !family.hasSuffix("_total") { problems.append("\(family): a counter's name should end in _total") }
        }
        for (family, type) in types where type == "summary" || type == "histogram" {
            for suffix in ["_sum", "_count"] where !text.contains("\n\(family)\(suffix)") && !text.hasPrefix("\(family)\(suffix)") {
                problems.append("\(family): a \(type) without \(family)\(suffix)")
            }
        }
        return problems
    }

    /// The family a sample belongs to: its own name, or without `_sum`/`_count`/`_bucket` when
    /// that names a summary or histogram.
    static func family(of sample: String, types: [String: String]) -> String {
        for suffix in ["_sum", "_count", "_bucket"] where sample.hasSuffix(suffix) {
            let base = String(sample.dropLast(suffix.count))
            if let type = types[base], type == "summary" || type == "histogram" { return base }
        }
        return sample
    }
}
