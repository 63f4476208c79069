import Foundation
import NetExt
import Synchronization

/// The reference school filter: blocks host names (with their subdomains), addresses and
/// cleartext URL prefixes (see `FilterRules`). Its rules are the configuration's
/// `vendorConfiguration["rules"]` (a list of rule strings) plus the file `blocklist.txt` in its
/// rules directory, which a control provider or an administrator may replace at any time: the
/// file is re-read when it changes, and new rules apply to new flows. With a control provider
/// configured, flows are answered `needRules` until its first list has been read. With keyword
/// rules, the answers to cleartext HTTP requests are read (`filterData`) for them: a keyword in
/// the first chunk of an answer gets the block page, one found later resets the connection.
public final class SchoolFilterProvider: FilterDataProvider {
    private struct State {
        var configured = FilterRules()
        var rules = FilterRules()
        /// A control provider supplies the rules: until its list has been read, flows need rules.
        var waitsForControlRules = false
        /// `blocklist.txt` in the rules directory.
        var watcher: RulesFileWatcher?
        /// For answers being read for keywords: the last bytes already passed, so a keyword
        /// across two chunks is still found.
        var tails: [UInt64: [UInt8]] = [:]
        var context: FilterContext?
        /// `vendorConfiguration["filterPorts"]`: only flows to these TCP/UDP ports are judged
        /// here; the kernel lets the rest pass. nil: every flow is judged.
        var filterPorts: [UInt16]?
        /// The address rules last handed to the kernel.
        var kernelPrefixes: [IPPrefix]?
    }

    private let state = Mutex(State())

    public init() {}

    public func startFilter(context: FilterContext) async throws {
        var configured = FilterRules()
        if case .array(let values)? = context.vendorConfiguration["rules"] {
            for (index, value) in values.enumerated() {
                guard let text = value.stringValue else { throw NetExtError.invalid("vendorConfiguration.rules[\(index)] is not a string") }
                try configured.add(text, at: "vendorConfiguration.rules[\(index)]")
            }
        }
        var watcher = context.rulesDirectory.map { RulesFileWatcher(path: $0 + "/blocklist.txt") }
        var fromFile: FilterRules?
        if let path = watcher?.path, case .changed(let text)? = try watcher?.poll(force: true) { fromFile = try Self.parse(text, path: path) }
        let filterPorts = try Self.ports(context.vendorConfiguration["filterPorts"])
        state.withLock { [watcher] state in
            state.context = context
            state.filterPorts = filterPorts
            state.configured = configured
            state.rules = Self.merge(configured, fromFile)
            state.waitsForControlRules = context.filterConfiguration?.filterControlProviderBundleIdentifier != nil && fromFile == nil
            state.watcher = watcher
        }
        let count = state.withLock { $0.rules.count }
        FileHandle.standardError.write(Data("school filter: started with \(count) rules\n".utf8))
        await applyKernelRules()
    }

    /// "80,443" or [80, 443].
    static func ports(_ value: JSONValue?) throws -> [UInt16]? {
        guard let value else { return nil }
        let items: [String]
        if case .array(let values) = value {
            items = values.map { $0.numberValue.map { String(Int($0)) } ?? $0.stringValue ?? "" }
        } else if let text = value.stringValue {
            items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        } else {
            throw NetExtError.invalid("vendorConfiguration.filterPorts must be a list of ports or a string like \"80,443\"")
        }
        return try items.map { item in
            guard let port = UInt16(item), port > 0 else { throw NetExtError.invalid("vendorConfiguration.filterPorts: '\(item)' is not a port") }
            return port
        }
    }

    /// What the kernel can decide without this provider (`FilterSettings`): flows to blocked
    /// addresses are dropped at their first packet; with `filterPorts`, only flows to those ports
    /// come here and the rest pass.
    static func kernelSettings(prefixes: [IPPrefix], filterPorts: [UInt16]?) -> FilterSettings {
        var rules = prefixes.map { FilterSettings.Rule(remotePrefix: $0, action: .drop) }
        for port in filterPorts ?? [] {
            rules.append(FilterSettings.Rule(remotePort: port, transport: .tcp, direction: .outbound, action: .filterData))
            rules.append(FilterSettings.Rule(remotePort: port, transport: .udp, direction: .outbound, action: .filterData))
        }
        return FilterSettings(rules: rules, defaultAction: filterPorts == nil ? .filterData : .allow)
    }

    /// Hands the address rules (and ports) to the kernel when they changed.
    private func applyKernelRules() async {
        let pending = state.withLock { state -> (FilterContext, FilterSettings)? in
            guard let context = state.context, state.kernelPrefixes != state.rules.prefixes else { return nil }
            state.kernelPrefixes = state.rules.prefixes
            return (context, Self.kernelSettings(prefixes: state.rules.prefixes, filterPorts: state.filterPorts))
        }
        guard let (context, settings) = pending else { return }
        do throws(NetExtError) { try await context.apply(settings) } catch {
            state.withLock { $0.kernelPrefixes = nil }
            FileHandle.standardError.write(Data("school filter: the kernel rules were not applied (\(error.message)); every flow is judged here\n".utf8))
        }
    }

    public func stopFilter(reason: ProviderStopReason) async {}

    /// How much of an answer is shown per call while reading it for keywords.
    static let keywordWindow = 16_384
    /// The most of an answer's start held back until it is all there. Held bytes are not
    /// acknowledged, so a sender stops after its initial congestion window (Linux: 10 segments,
    /// about 14 KB on a 1500-byte link) until some are passed: a larger first chunk would never
    /// fill.
    static let firstChunk = 8_192
    /// Answers read for keywords at once, at most (the oldest are forgotten).
    static let keywordFlowsLimit = 4_096

    public func handleNewFlow(_ flow: FilterFlow) -> FilterNewFlowVerdict {
        reloadIfChanged()
        return state.withLock { state in
            if state.waitsForControlRules { return .needRules }
            let verdict = state.rules.verdict(for: flow)
            if verdict == .allow, !state.rules.keywords.isEmpty, flow.transport == .tcp, flow.url != nil {
                if state.tails.count >= Self.keywordFlowsLimit, let oldest = state.tails.keys.min() { state.tails[oldest] = nil }
                state.tails[flow.id] = []
                return .filterData(peekInboundBytes: Self.firstChunk, peekOutboundBytes: nil)
            }
            return FilterNewFlowVerdict(verdict)
        }
    }

    /// Reads an HTTP answer for keywords. Its first chunk (the head and the body up to the
    /// window, or the whole answer when it is shorter) is held until it is all there, so a
    /// keyword in it gets the block page; later chunks are passed as they are read, and a keyword
    /// in one of them resets the connection. Beyond the scan limit the flow is allowed.
    public func handleInboundData(from flow: FilterFlow, readBytesStartOffset offset: Int, readBytes: [UInt8]) -> FilterDataVerdict {
        state.withLock { state in
            let tail = state.tails[flow.id] ?? []
            if state.rules.keyword(in: tail + readBytes) != nil {
                state.tails[flow.id] = nil
                return .remediate(FilterRemediation())
            }
            if offset == 0, readBytes.count < Self.firstChunk, !Self.isWhole(answerStart: readBytes) {
                // Hold the first chunk until it is all there (it is shown again with the rest).
                return .data(passBytes: 0, peekBytes: Self.firstChunk)
            }
            if offset + readBytes.count >= FilterRules.keywordScanLimit {
                state.tails[flow.id] = nil
                return .allow
            }
            let keep = max(state.rules.longestKeyword - 1, 0)
            state.tails[flow.id] = Array((tail + readBytes).suffix(keep))
            return .data(passBytes: readBytes.count, peekBytes: Self.keywordWindow)
        }
    }

    /// Whether `bytes`, the start of an HTTP answer, hold its whole head and as much of its body
    /// as its `Content-Length` says (or a chunked body's last chunk). An answer that cannot be
    /// read this way counts as whole: it is judged on what is there.
    static func isWhole(answerStart bytes: [UInt8]) -> Bool {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return false }
        guard let headEnd = (0...(bytes.count - 4)).first(where: { bytes[$0..<($0 + 4)].elementsEqual(separator) }) else {
            // No end of head yet: more is coming unless this is not HTTP at all.
            return !bytes.starts(with: Array("HTTP/".utf8))
        }
        let head = String(decoding: bytes[..<headEnd], as: UTF8.self).lowercased()
        let bodyStart = headEnd + 4
        for line in head.split(separator: "\r\n") {
            if line.hasPrefix("content-length:"), let length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) {
                return bytes.count - bodyStart >= length
            }
            if line.hasPrefix("transfer-encoding:"), line.contains("chunked") {
                return bytes.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8))
            }
        }
        // No length: the body runs to the end of the connection (the completion says so).
        return false
    }

    public func handleInboundDataComplete(for flow: FilterFlow) -> FilterDataVerdict {
        _ = state.withLock { $0.tails.removeValue(forKey: flow.id) }
        return .allow
    }

    /// The control provider wrote new rules: read them now.
    public func handleRulesChanged() async {
        reloadIfChanged(force: true)
    }

    /// Re-reads the rules file when it changed; a malformed file keeps the rules in force (and
    /// says why on standard error).
    private func reloadIfChanged(force: Bool = false) {
        let outcome = state.withLock { state -> String? in
            guard var watcher = state.watcher else { return nil }
            defer { state.watcher = watcher }
            do {
                switch try watcher.poll(force: force) {
                case .unchanged: return nil
                case .absent: state.rules = state.configured
                case .changed(let text):
                    state.rules = Self.merge(state.configured, try Self.parse(text, path: watcher.path))
                    state.waitsForControlRules = false
                }
                return "rules reloaded (\(state.rules.count) rules)"
            } catch {
                return "\(watcher.path): \(error); keeping the rules in force"
            }
        }
        if let outcome {
            FileHandle.standardError.write(Data("school filter: \(outcome)\n".utf8))
            Task { await applyKernelRules() }
        }
    }

    private static func parse(_ text: String, path: String) throws(NetExtError) -> FilterRules {
        do throws(NetExtError) { return try FilterRules(text: text) } catch {
            throw NetExtError.invalid("\(path): \(error.message)")
        }
    }

    private static func merge(_ configured: FilterRules, _ file: FilterRules?) -> FilterRules {
        guard let file else { return configured }
        var merged = configured
        for host in file.hosts { try? merged.add(host, at: "file") }
        for prefix in file.prefixes { try? merged.add(prefix.description, at: "file") }
        for url in file.urlPrefixes { try? merged.add(url, at: "file") }
        for keyword in file.keywords { try? merged.add("keyword:" + String(decoding: keyword, as: UTF8.self), at: "file") }
        return merged
    }
}
