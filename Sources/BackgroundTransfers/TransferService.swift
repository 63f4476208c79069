import Foundation
import NetExtHTTP

/// An app attached to the service: where its session's events go.
protocol TransferEventSink: AnyObject, Sendable {
    func send(_ message: TransferServiceMessage)
}

/// The user's transfer service: keeps background sessions' tasks in a ``TransferStore``,
/// carries each running one out (retrying per ``TransferRetryPolicy``, a network change
/// cutting the wait short), and tells the apps attached as a task's session of its progress
/// and completion; a completion nobody was attached for waits in the store until one is.
actor TransferService {
    private let store: TransferStore
    /// Where each task's files live: `<directory>/<task id>/`.
    private let directory: URL
    private let policy: TransferRetryPolicy
    private let log: @Sendable (String) -> Void
    /// Attached apps, by session.
    private var attached: [String: [ObjectIdentifier: any TransferEventSink]] = [:]
    private var runners: [Int: Runner] = [:]
    /// Bumped by each network change: a waiting task compares it to wake early.
    private var networkGeneration = 0
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    /// The attempt each running task is making, and when its answer last moved.
    private var attempts: [Int: TransferAttempt] = [:]
    private var lastProgress: [Int: ContinuousClock.Instant] = [:]
    /// How long an attempt may go without a byte after a network change before it is cut
    /// and made again on the new network (its connection may be bound to an address gone).
    private let stallAfterChange: Duration

    private final class Runner: Sendable {
        let task: Task<Void, Never>
        init(task: Task<Void, Never>) { self.task = task }
    }

    init(
        store: TransferStore, directory: URL, policy: TransferRetryPolicy = TransferRetryPolicy(), stallAfterChange: Duration = .seconds(2),
        log: @escaping @Sendable (String) -> Void
    ) {
        self.store = store
        self.stallAfterChange = stallAfterChange
        self.directory = directory
        self.policy = policy
        self.log = log
    }

    /// Goes on with every task that was running when the service last stopped.
    func start() throws(TransferServiceError) {
        // A task acknowledged just before a crash: its record went first, its files remain.
        let recorded = try store.allIDs()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
            if let id = Int(name), !recorded.contains(id) { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
        }
        for record in try store.running() {
            log("task \(record.id) (\(record.session)): going on after a restart")
            run(record.id)
        }
    }

    /// Whether nothing is attached and nothing runs (the service may exit).
    var isIdle: Bool { attached.values.allSatisfy(\.isEmpty) && runners.isEmpty }

    /// The number of tasks loading or waiting to try again.
    var runningCount: Int { runners.count }

    func detach(_ sink: any TransferEventSink) {
        for session in attached.keys { attached[session]?[ObjectIdentifier(sink)] = nil }
    }

    /// A network change: waiting tasks try again now, and a loading one that then goes
    /// `stallAfterChange` without a byte is cut and made again (its connection may ride an
    /// address or route that is gone; waiting out the idle timeout could take a minute).
    func networkChanged() {
        networkGeneration += 1
        let waiting = waiters
        waiters = [:]
        if !waiting.isEmpty { log("network changed: \(waiting.count) waiting task(s) try again") }
        for (_, waiter) in waiting { waiter.resume() }
        let changed = ContinuousClock.now
        for id in attempts.keys {
            Task {
                try? await Task.sleep(for: stallAfterChange)
                await cutIfStalled(id, since: changed)
            }
        }
    }

    private func cutIfStalled(_ id: Int, since change: ContinuousClock.Instant) async {
        guard let attempt = attempts[id], (lastProgress[id] ?? change) <= change else { return }
        log("task \(id): no byte since the network changed; trying again on the new network")
        await attempt.close()
    }

    // MARK: Commands

    /// Carries out one command from `sink`, attached (or not yet) as `session`; the reply, and
    /// the messages to send after it.
    func handle(_ command: TransferCommand, session: String?, from sink: any TransferEventSink) -> (TransferReply, [TransferServiceMessage]) {
        do {
            return try perform(command, session: session, sink: sink)
        } catch {
            log("command failed: \(error)")
            return (.refused("\(error)"), [])
        }
    }

    private func perform(_ command: TransferCommand, session: String?, sink: any TransferEventSink) throws(TransferServiceError) -> (TransferReply, [TransferServiceMessage]) {
        if case .attach(let name) = command {
            guard Self.isValidSession(name) else { return (.refused("'\(name)' is not a session identifier (1–255 characters, no control characters)"), []) }
            detach(sink)
            attached[name, default: [:]][ObjectIdentifier(sink)] = sink
            let records = try store.records(session: name)
            var events: [TransferServiceMessage] = []
            for record in records where record.state == .completed {
                if let outcome = record.outcome { events += Self.events(of: record, outcome).map { .event($0) } }
            }
            events.append(.event(.eventsDelivered))
            return (.attached(records.map(\.status)), events)
        }
        guard let session else { return (.refused("attach to a session first"), []) }
        switch command {
        case .attach: return (.done, [])
        case .list:
            return (.tasks(try store.records(session: session).map(\.status)), [])
        case .create(let spec):
            if let reason = Self.refusal(of: spec) { return (.refused(reason), []) }
            let record = try store.insert(session: session, spec: spec)
            log("task \(record.id) (\(session)): \(spec.kind.rawValue) of \(spec.request.url.host ?? "?") made")
            return (.created(record.status), [])
        case .resume(let id):
            guard let record = try store.record(id), record.session == session else { return (.refused("this session has no task \(id)"), []) }
            if record.state == .suspended {
                try store.setState(id, .running)
                run(id)
            }
            return (.done, [])
        case .cancel(let id):
            guard let record = try store.record(id), record.session == session else { return (.refused("this session has no task \(id)"), []) }
            if record.state != .completed { cancel(record) }
            return (.done, [])
        case .acknowledge(let id):
            guard let record = try store.record(id), record.session == session else { return (.refused("this session has no task \(id)"), []) }
            guard record.state == .completed else { return (.refused("task \(id) has not completed"), []) }
            // The record first: a crash between the two leaves files that `start()` removes.
            try store.delete(id)
            try? FileManager.default.removeItem(at: taskDirectory(id))
            return (.done, [])
        }
    }

    static func isValidSession(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// Why a task cannot be made, or nil.
    static func refusal(of spec: TransferSpec) -> String? {
        guard URLSession.canLoad(spec.request.url) else { return "'\(spec.request.url.absoluteString)' is not an http or https URL with a host" }
        switch spec.kind {
        case .download:
            if spec.uploadFile != nil { return "a download task has no upload file" }
        case .upload:
            guard let file = spec.uploadFile else { return "an upload task needs the file to send" }
            guard file.hasPrefix("/") else { return "the upload file '\(file)' is not an absolute path" }
            guard FileManager.default.isReadableFile(atPath: file) else { return "the upload file \(file) cannot be read" }
        }
        return nil
    }

    // MARK: Running

    private func taskDirectory(_ id: Int) -> URL { directory.appendingPathComponent("\(id)") }

    private func run(_ id: Int) {
        guard runners[id] == nil else { return }
        runners[id] = Runner(task: Task { await self.carryOut(id) })
    }

    private func cancel(_ record: TransferRecord) {
        runners[record.id]?.task.cancel()
        runners[record.id] = nil
        waiters.removeValue(forKey: record.id)?.resume()
        finish(record, TransferOutcome(error: "The task was cancelled.", cancelled: true))
    }

    /// Tries until the task succeeds, fails for good, is cancelled or runs out of time.
    private func carryOut(_ id: Int) async {
        var failures = 0
        while !Task.isCancelled {
            guard let record = try? store.record(id), record.state == .running else { break }
            let deadline = record.created.addingTimeInterval(record.spec.settings.timeoutIntervalForResource)
            if Date() >= deadline {
                finish(record, TransferOutcome(error: "The task gave up after \(record.retries) retries: it did not complete within its resource timeout of \(Int(record.spec.settings.timeoutIntervalForResource)) s (last failure: \(record.lastError ?? "none")).", cancelled: false))
                break
            }
            let directory = taskDirectory(id)
            do { try TransferDirectories.makePrivate(directory.path) } catch {
                finish(record, TransferOutcome(error: "\(error)"))
                break
            }
            let generation = networkGeneration
            let result = await attempt(record, in: directory)
            if Task.isCancelled { break }
            switch result {
            case .success(let outcome):
                finish(record, outcome)
                return
            case .failure(let error):
                // `.cancelled` here is the service cutting a stalled attempt (an app's cancel
                // cancels this task, which stopped above).
                guard TransferRetryPolicy.isRetryable(error) || error == .cancelled else {
                    finish(record, TransferOutcome(error: error.description))
                    return
                }
                failures += 1
                try? store.noteRetry(id, error: error.description, bytesReceived: TransferAttempt.bytesOnDisk(in: directory))
                // The network changed while it loaded: the new one deserves a try at once.
                if generation != networkGeneration {
                    failures = 0
                    log("task \(id): attempt \(record.retries + 1) failed (\(Self.redacted(error.description, record))) after a network change; trying again now")
                    continue
                }
                let delay = min(policy.delay(afterFailures: failures), max(0, deadline.timeIntervalSinceNow))
                log("task \(id): attempt \(record.retries + 1) failed (\(Self.redacted(error.description, record))); trying again in \(delay) s or at a network change")
                await wait(id, seconds: delay)
            }
        }
        runners[id] = nil
    }

    private func attempt(_ record: TransferRecord, in directory: URL) async -> Result<TransferOutcome, HTTPLoadError> {
        let attempt: TransferAttempt
        do { attempt = try TransferAttempt(directory: directory, settings: record.spec.settings) } catch { return .failure(error) }
        attempts[record.id] = attempt
        lastProgress[record.id] = .now
        defer {
            attempts[record.id] = nil
            lastProgress[record.id] = nil
        }
        // Cancelling the task closes the attempt's connections, which ends the load.
        return await withTaskCancellationHandler {
            let result: Result<TransferOutcome, HTTPLoadError>
            do throws(HTTPLoadError) {
                switch record.spec.kind {
                case .download:
                    let progress = ProgressThrottle { [weak self] written, expected in
                        Task { await self?.progress(record, written: written, expected: expected) }
                    }
                    result = .success(try await attempt.download(record.spec.request, progress: progress.report))
                case .upload:
                    result = .success(try await attempt.upload(record.spec.request, from: record.spec.uploadFile ?? ""))
                }
            } catch {
                result = .failure(error)
            }
            await attempt.close()
            return result
        } onCancel: {
            Task { await attempt.close() }
        }
    }

    private func wait(_ id: Int, seconds: Double) async {
        let generation = networkGeneration
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            await self?.wake(id)
        }
        await withCheckedContinuation { continuation in
            if generation != networkGeneration || Task.isCancelled {
                continuation.resume()
            } else {
                waiters[id] = continuation
            }
        }
        timer.cancel()
    }

    private func wake(_ id: Int) { waiters.removeValue(forKey: id)?.resume() }

    private func progress(_ record: TransferRecord, written: Int64, expected: Int64?) {
        if attempts[record.id] != nil { lastProgress[record.id] = .now }
        try? store.noteProgress(record.id, bytesReceived: written, bytesExpected: expected)
        broadcast(record.session, .progress(task: record.id, written: written, expected: expected))
    }

    /// Records the outcome and tells the session's attached apps; they acknowledge it.
    private func finish(_ record: TransferRecord, _ outcome: TransferOutcome) {
        do { try store.complete(record.id, outcome: outcome) } catch {
            log("task \(record.id): the outcome could not be recorded: \(error)")
        }
        runners[record.id] = nil
        log("task \(record.id) (\(record.session)): \(outcome.error.map { "failed: \(Self.redacted($0, record))" } ?? "completed (status \(outcome.response?.statusCode ?? 0))")")
        for event in Self.events(of: record, outcome) { broadcast(record.session, event) }
    }

    private func broadcast(_ session: String, _ event: TransferEvent) {
        for sink in (attached[session] ?? [:]).values { sink.send(.event(event)) }
    }

    /// `text` with the task's URL cut to its origin: paths and queries may carry tokens, and the
    /// log is not the place for them.
    static func redacted(_ text: String, _ record: TransferRecord) -> String {
        let url = record.spec.request.url
        var origin = "\(url.scheme ?? "?")://\(url.host ?? "?")"
        if let port = url.port { origin += ":\(port)" }
        return text.replacingOccurrences(of: url.absoluteString, with: origin + "/…")
    }

    static func events(of record: TransferRecord, _ outcome: TransferOutcome) -> [TransferEvent] {
        var events: [TransferEvent] = []
        if outcome.error == nil, let response = outcome.response {
            switch record.spec.kind {
            case .download: events.append(.finishedDownloading(task: record.id, location: outcome.location ?? "", response: response))
            case .upload: events.append(.received(task: record.id, response: response, body: outcome.body ?? Data()))
            }
        }
        events.append(.completed(task: record.id, error: outcome.error, cancelled: outcome.cancelled))
        return events
    }
}

/// Passes progress on at most every `interval` (and always the last report before a pause
/// is superseded by the next), so that a fast download does not flood the apps.
final class ProgressThrottle: @unchecked Sendable {
    // @unchecked: `last` is behind `lock`.
    private let lock = NSLock()
    private var last = ContinuousClock.now - .seconds(60)
    private let interval: Duration
    private let forward: @Sendable (Int64, Int64?) -> Void

    init(interval: Duration = .milliseconds(250), forward: @escaping @Sendable (Int64, Int64?) -> Void) {
        self.interval = interval
        self.forward = forward
    }

    var report: @Sendable (Int64, Int64?) -> Void {
        { [self] written, expected in
            let now = ContinuousClock.now
            let due = lock.withLock {
                guard now - last >= interval || (expected != nil && written == expected) else { return false }
                last = now
                return true
            }
            if due { forward(written, expected) }
        }
    }
}
