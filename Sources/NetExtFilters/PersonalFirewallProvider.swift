import Foundation
import NetExt
import Synchronization

/// The reference personal firewall's data provider: per-program rules (`FirewallRules`) from
/// `vendorConfiguration["rules"]` (a list of rule lines, the administrator's, checked first)
/// and the file `firewall.rules` in its rules directory (written by the control provider as
/// the user answers questions, or by an administrator; re-read when it changes). A flow no rule
/// covers goes to the control provider (`needRules`), which asks the user; without a control
/// provider `vendorConfiguration["default"]` (`allow` or `deny`, default `deny`) decides.
public final class PersonalFirewallProvider: FilterDataProvider {
    private struct State {
        var configured = FirewallRules()
        var answered = FirewallRules()
        var watcher: RulesFileWatcher?
        var asksControl = false
        var defaultAllows = false
    }

    private let state = Mutex(State())

    public init() {}

    public func startFilter(context: FilterContext) async throws {
        let configured = try Self.configuredRules(context.vendorConfiguration)
        let fallback = context.vendorConfiguration["default"]?.stringValue ?? "deny"
        guard fallback == "allow" || fallback == "deny" else { throw NetExtError.invalid("vendorConfiguration.default must be allow or deny, not '\(fallback)'") }
        state.withLock { state in
            state.configured = configured
            state.watcher = context.rulesDirectory.map { RulesFileWatcher(path: $0 + "/firewall.rules") }
            state.asksControl = context.filterConfiguration?.filterControlProviderBundleIdentifier != nil
            state.defaultAllows = fallback == "allow"
        }
        reload(force: true)
        let counts = state.withLock { ($0.configured.count, $0.answered.count) }
        FileHandle.standardError.write(Data("personal firewall: started with \(counts.0) configured and \(counts.1) answered rules\n".utf8))
    }

    /// `vendorConfiguration["rules"]`, each line checked.
    static func configuredRules(_ vendor: [String: JSONValue]) throws -> FirewallRules {
        guard case .array(let values)? = vendor["rules"] else { return FirewallRules() }
        var lines: [String] = []
        for (index, value) in values.enumerated() {
            guard let line = value.stringValue else { throw NetExtError.invalid("vendorConfiguration.rules[\(index)] is not a string") }
            lines.append(line)
        }
        do throws(NetExtError) { return try FirewallRules(text: lines.joined(separator: "\n")) } catch {
            throw NetExtError.invalid("vendorConfiguration.rules: \(error.message.replacingOccurrences(of: "line ", with: "entry "))")
        }
    }

    public func stopFilter(reason: ProviderStopReason) async {}

    public func handleNewFlow(_ flow: FilterFlow) -> FilterNewFlowVerdict {
        reload()
        return state.withLock { state in
            if let rule = state.configured.match(flow) ?? state.answered.match(flow) { return rule.action == .allow ? .allow : .drop }
            if state.asksControl { return .needRules }
            return state.defaultAllows ? .allow : .drop
        }
    }

    public func handleRulesChanged() async {
        reload(force: true)
    }

    /// Re-reads `firewall.rules` when it changed; a malformed file keeps the rules in force.
    private func reload(force: Bool = false) {
        state.withLock { state in
            guard var watcher = state.watcher else { return }
            defer { state.watcher = watcher }
            do {
                switch try watcher.poll(force: force) {
                case .unchanged: return
                case .absent: state.answered = FirewallRules()
                case .changed(let text): state.answered = try FirewallRules(text: text)
                }
            } catch {
                FileHandle.standardError.write(Data("personal firewall: \(watcher.path): \(error); keeping the rules in force\n".utf8))
            }
        }
    }
}
