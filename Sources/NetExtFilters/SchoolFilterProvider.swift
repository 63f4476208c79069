import Foundation
import NetExt
import NetExtCore
import NetExtIPC
import Synchronization

/// The reference school filter: blocks host names (with their subdomains), addresses and
/// cleartext URL prefixes (see `FilterRules`). Its rules are the configuration's
/// `vendorConfiguration["rules"]` (a list of rule strings) plus the file `blocklist.txt` in its
/// rules directory, which a control provider or an administrator may replace at any time: the
/// file is re-read when it changes, and new rules apply to new flows. With a control provider
/// configured, flows are answered `needRules` until its first list has been read.
public final class SchoolFilterProvider: FilterDataProvider {
    private struct State {
        var configured = FilterRules()
        var rules = FilterRules()
        var fileStamp: Date?
        var lastCheck: ContinuousClock.Instant?
        /// A control provider supplies the rules: until its list has been read, flows need rules.
        var waitsForControlRules = false
        /// `blocklist.txt` in the rules directory.
        var file: String?
    }

    private let state = Mutex(State())
    /// How often the rules file is checked for changes, at most.
    static let recheckInterval: Duration = .milliseconds(500)

    public init() {}

    public func startFilter(context: FilterContext) async throws {
        var configured = FilterRules()
        if case .array(let values)? = context.vendorConfiguration["rules"] {
            for (index, value) in values.enumerated() {
                guard let text = value.stringValue else { throw NetExtError.invalid("vendorConfiguration.rules[\(index)] is not a string") }
                try configured.add(text, at: "vendorConfiguration.rules[\(index)]")
            }
        }
        let file = context.rulesDirectory.map { $0 + "/blocklist.txt" }
        let fromFile = try file.flatMap(Self.readRules)
        state.withLock { state in
            state.configured = configured
            state.rules = Self.merge(configured, fromFile?.rules)
            state.fileStamp = fromFile?.stamp
            state.lastCheck = .now
            state.waitsForControlRules = context.filterConfiguration?.filterControlProviderBundleIdentifier != nil && fromFile == nil
            state.file = file
        }
        let count = state.withLock { $0.rules.count }
        FileHandle.standardError.write(Data("school filter: started with \(count) rules\n".utf8))
    }

    public func stopFilter(reason: ProviderMessage.StopReason) async {}

    public func handleNewFlow(_ flow: FilterFlow) -> FilterVerdict {
        reloadIfChanged()
        return state.withLock { state in state.waitsForControlRules ? .needRules : state.rules.verdict(for: flow) }
    }

    /// The control provider wrote new rules: read them now.
    public func handleRulesChanged() async {
        state.withLock { $0.lastCheck = nil }
        reloadIfChanged(force: true)
    }

    /// Re-reads the rules file when its modification time changed; a malformed file keeps the
    /// rules in force (and says why on standard error).
    private func reloadIfChanged(force: Bool = false) {
        guard let file = state.withLock({ $0.file }) else { return }
        let now = ContinuousClock.now
        let due = state.withLock { state -> Bool in
            if !force, let last = state.lastCheck, now - last < Self.recheckInterval { return false }
            state.lastCheck = now
            return true
        }
        guard due else { return }
        let stamp = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date
        guard force || stamp != state.withLock({ $0.fileStamp }) else { return }
        do {
            let loaded = try Self.readRules(file)
            state.withLock { state in
                state.rules = Self.merge(state.configured, loaded?.rules)
                state.fileStamp = loaded?.stamp
                if loaded != nil { state.waitsForControlRules = false }
            }
            FileHandle.standardError.write(Data("school filter: rules reloaded (\(state.withLock { $0.rules.count }) rules)\n".utf8))
        } catch {
            state.withLock { $0.fileStamp = stamp }
            FileHandle.standardError.write(Data("school filter: \(file): \(error); keeping the rules in force\n".utf8))
        }
    }

    private static func readRules(_ path: String) throws -> (rules: FilterRules, stamp: Date?)? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let stamp = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw NetExtError.readWrite("cannot read \(path): \(error.localizedDescription)")
        }
        do throws(NetExtError) { return (try FilterRules(text: text), stamp) } catch {
            throw NetExtError.invalid("\(path): \(error.message)")
        }
    }

    private static func merge(_ configured: FilterRules, _ file: FilterRules?) -> FilterRules {
        guard let file else { return configured }
        var merged = configured
        for host in file.hosts { try? merged.add(host, at: "file") }
        for prefix in file.prefixes { try? merged.add(prefix.description, at: "file") }
        for url in file.urlPrefixes { try? merged.add(url, at: "file") }
        return merged
    }
}
