import Foundation
import HTTPFetching
import NetExt
import Synchronization

/// The reference school filter's control provider: fetches the block list from
/// `vendorConfiguration["rulesURL"]` (http or https, HTTP/2 when the server offers it; an https
/// server must prove itself against the system's CA bundle, or only against the certificates in
/// `vendorConfiguration["rulesCAFile"]`, a PEM file) at start, every
/// `vendorConfiguration["rulesRefreshSeconds"]` seconds (default 300), and whenever the data
/// provider asks for rules; writes it atomically to `blocklist.txt` in the rules directory when
/// it changed and is well-formed, and tells netextd (`notifyRulesChanged`). A list with a bad
/// line is refused whole (the rules in force stay) and the line is named on standard error.
public final class SchoolControlProvider: FilterControlProvider {
    private struct State {
        var rulesURL: URL?
        var file: String?
        /// The fetch under way, which concurrent askers share.
        var inFlight: Task<Bool, Never>?
        var failClosed = false
        var refresher: Task<Void, Never>?
        var upstream: HTTPUpstream?
    }

    private let state = Mutex(State())

    public init() {}

    public func startFilter(context: FilterControlContext) async throws {
        guard let directory = context.rulesDirectory else { throw NetExtError.invalid("netextd gave no rules directory (NETEXT_FILTER_RULES_DIR)") }
        guard let text = context.vendorConfiguration["rulesURL"]?.stringValue, let url = URL(string: text), ["http", "https"].contains(url.scheme ?? "") else {
            throw NetExtError.invalid("vendorConfiguration.rulesURL must be an http(s) URL of the block list")
        }
        let refreshValue = context.vendorConfiguration["rulesRefreshSeconds"]
        let refresh = refreshValue?.numberValue ?? refreshValue?.stringValue.flatMap(Double.init) ?? 300
        guard refresh >= 1 else { throw NetExtError.invalid("vendorConfiguration.rulesRefreshSeconds must be at least 1") }
        var tls: ClientTLS?
        if let caFile = context.vendorConfiguration["rulesCAFile"]?.stringValue {
            do throws(TLSSetupError) { tls = try ClientTLS(caFile: caFile) } catch {
                throw NetExtError.invalid("vendorConfiguration.rulesCAFile: \(error.description)")
            }
        }
        let upstream = HTTPUpstream(timeout: 10, tls: tls)
        state.withLock { state in
            state.upstream = upstream
            state.rulesURL = url
            state.file = directory + "/blocklist.txt"
            state.failClosed = context.filterConfiguration?.failClosed ?? false
        }
        if await fetch() { try await context.notifyRulesChanged() }
        let refresher = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(refresh))
                guard let self, !Task.isCancelled else { return }
                if await self.fetch() { try? await context.notifyRulesChanged() }
            }
        }
        state.withLock { $0.refresher = refresher }
    }

    public func stopFilter(reason: ProviderStopReason) async {
        state.withLock { $0.refresher?.cancel() }
    }

    public func handleNewFlow(_ flow: FilterFlow) async -> FilterControlVerdict {
        _ = await fetch()
        let (file, failClosed) = state.withLock { ($0.file, $0.failClosed) }
        if let file, FileManager.default.fileExists(atPath: file) { return .updateRules }
        // No list could be had: the configuration's failure policy decides.
        return failClosed ? .drop : .allow
    }

    /// Fetches the list (joining a fetch already under way); returns true when a new, valid
    /// list was written.
    private func fetch() async -> Bool {
        let task = state.withLock { state -> Task<Bool, Never> in
            if let running = state.inFlight { return running }
            let task = Task { await self.download() }
            state.inFlight = task
            return task
        }
        let written = await task.value
        state.withLock { state in
            if state.inFlight == task { state.inFlight = nil }
        }
        return written
    }

    private func download() async -> Bool {
        let (url, file, upstream) = state.withLock { ($0.rulesURL, $0.file, $0.upstream) }
        guard let url, let file, let upstream else { return false }
        let body: Data
        do throws(HTTPUpstream.Failure) {
            let answer = try await upstream.exchange(method: "GET", url: url, headers: [], body: [])
            guard answer.status == 200 else {
                report("\(url): \(answer.statusText); keeping the rules in force")
                return false
            }
            body = Data(answer.body)
        } catch {
            report("\(url): \(error.description); keeping the rules in force")
            return false
        }
        guard let text = String(data: body, encoding: .utf8) else {
            report("\(url): the list is not UTF-8; keeping the rules in force")
            return false
        }
        do throws(NetExtError) { _ = try FilterRules(text: text) } catch {
            report("\(url): \(error.message); keeping the rules in force")
            return false
        }
        if let current = FileManager.default.contents(atPath: file), current == body { return false }
        do {
            try body.write(to: URL(fileURLWithPath: file), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        } catch {
            report("cannot write \(file): \(error.localizedDescription)")
            return false
        }
        report("new block list from \(url) written (\(body.count) bytes)")
        return true
    }

    private func report(_ line: String) {
        FileHandle.standardError.write(Data("school filter control: \(line)\n".utf8))
    }
}
