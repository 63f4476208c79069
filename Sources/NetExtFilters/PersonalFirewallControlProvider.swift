import Foundation
import NetExt
import Synchronization

/// The reference personal firewall's control provider: a flow no rule covers becomes a question
/// (`FirewallPromptBook`: one per program and destination) that `netext filter prompt` lists and
/// answers. The flow waits for an answer up to `vendorConfiguration["promptWaitMilliseconds"]`
/// (default 1500, below netextd's verdict deadline); unanswered, it is dropped (or allowed with
/// `vendorConfiguration["unanswered"] = "allow"`) and the question stays open. An answer
/// becomes a rule at the top of `firewall.rules` (written atomically), the data provider is
/// told, and waiting flows are judged by it.
public final class PersonalFirewallControlProvider: FilterControlProvider {
    private struct State {
        var book = FirewallPromptBook()
        /// Flows waiting for an answer, by question.
        var waiters: [Int: [UUID: CheckedContinuation<Bool, Never>]] = [:]
        var file: String?
        var wait: Duration = .milliseconds(1_500)
        var allowUnanswered = false
        var context: FilterControlContext?
    }

    private let state = Mutex(State())

    public init() {}

    public func startFilter(context: FilterControlContext) async throws {
        guard let directory = context.rulesDirectory else { throw NetExtError.invalid("netextd gave no rules directory (NETEXT_FILTER_RULES_DIR)") }
        let waitValue = context.vendorConfiguration["promptWaitMilliseconds"]
        let milliseconds = waitValue?.numberValue ?? waitValue?.stringValue.flatMap(Double.init) ?? 1_500
        guard milliseconds >= 0, milliseconds <= 10_000 else { throw NetExtError.invalid("vendorConfiguration.promptWaitMilliseconds must be 0–10000") }
        let unanswered = context.vendorConfiguration["unanswered"]?.stringValue ?? "deny"
        guard unanswered == "allow" || unanswered == "deny" else { throw NetExtError.invalid("vendorConfiguration.unanswered must be allow or deny") }
        state.withLock { state in
            state.file = directory + "/firewall.rules"
            state.wait = .milliseconds(Int(milliseconds))
            state.allowUnanswered = unanswered == "allow"
            state.context = context
        }
    }

    public func stopFilter(reason: ProviderStopReason) async {
        let waiting = state.withLock { state in
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap(\.values)
        }
        for waiter in waiting { waiter.resume(returning: false) }
    }

    public func handleNewFlow(_ flow: FilterFlow) async -> FilterControlVerdict {
        let (id, isNew, wait, allowUnanswered) = state.withLock { state in
            let (id, isNew) = state.book.ask(about: flow, now: Date())
            return (id, isNew, state.wait, state.allowUnanswered)
        }
        if isNew { FileHandle.standardError.write(Data("personal firewall: question \(id) opened (netext filter prompt)\n".utf8)) }
        let answered = await answer(to: id, within: wait)
        if answered { return .updateRules }
        return allowUnanswered ? .allow : .drop
    }

    /// Waits for question `id` to be answered; false when `wait` passes first.
    private func answer(to id: Int, within wait: Duration) async -> Bool {
        let token = UUID()
        return await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
            state.withLock { $0.waiters[id, default: [:]][token] = waiter }
            Task {
                try? await Task.sleep(for: wait)
                let expired = self.state.withLock { $0.waiters[id]?.removeValue(forKey: token) }
                expired?.resume(returning: false)
            }
        }
    }

    /// `FirewallPromptCommand` in, `FirewallPromptReply` out (JSON).
    public func handleAppMessage(_ data: Data) async -> Data? {
        let reply: FirewallPromptReply
        do {
            switch try JSONDecoder().decode(FirewallPromptCommand.self, from: data) {
            case .list:
                reply = FirewallPromptReply(prompts: state.withLock { $0.book.open })
            case .answer(let id, let allow, let anyDestination):
                reply = try await answer(id, allow: allow, anyDestination: anyDestination)
            }
        } catch {
            reply = FirewallPromptReply(prompts: state.withLock { $0.book.open }, error: "\(error)")
        }
        return try? JSONEncoder().encode(reply)
    }

    private func answer(_ id: Int, allow: Bool, anyDestination: Bool) async throws -> FirewallPromptReply {
        guard let file = state.withLock({ $0.file }) else { throw NetExtError.invalid("the firewall has not started") }
        // The rules in force are kept whole: a file an administrator broke is refused, not
        // overwritten (and the question stays open).
        var existing = FirewallRules()
        if FileManager.default.fileExists(atPath: file) {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            do throws(NetExtError) { existing = try FirewallRules(text: text) } catch {
                throw NetExtError.invalid("\(file): \(error.message); fix it, then answer again")
            }
        }
        let (rule, context) = state.withLock { state in (state.book.answer(id, allow: allow, anyDestination: anyDestination), state.context) }
        guard let rule else {
            return FirewallPromptReply(prompts: state.withLock { $0.book.open }, error: "no open question \(id)")
        }
        guard let context else { throw NetExtError.invalid("the firewall has not started") }
        try context.writeRulesFile((file as NSString).lastPathComponent, contents: Array(existing.prepending(rule).text.utf8))
        let waiting = state.withLock { $0.waiters.removeValue(forKey: id).map { Array($0.values) } ?? [] }
        if waiting.isEmpty {
            // No flow is waiting (they were decided unanswered): the data provider reloads now.
            try? await context.notifyRulesChanged()
        }
        for waiter in waiting { waiter.resume(returning: true) }
        return FirewallPromptReply(prompts: state.withLock { $0.book.open }, addedRule: rule.description)
    }
}
