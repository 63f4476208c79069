import Foundation
import NetExtIPC
import NetExtTransport
import NIOCore
import Synchronization

/// A background session's link to the user's transfer service: connects (starting the
/// service when none answers), attaches as the session, sends commands and hands the
/// service's events to the session's delegate, one at a time and in order.
final class BackgroundTransferClient: Sendable {
    let identifier: String
    let socketPath: String
    private let state = Mutex(State())
    private let connecting = Mutex<Task<FramedConnection, any Error>?>(nil)

    private struct State {
        var connection: FramedConnection?
        var serial = 0
        var pending: [Int: CheckedContinuation<TransferReply, any Error>] = [:]
        var tasks: [Int: URLSessionTask] = [:]
        var outstanding: [UUID: Task<Void, Never>] = [:]
        weak var session: URLSession?
    }

    init(identifier: String, socketPath: String = BackgroundTransferPaths.socket) {
        self.identifier = identifier
        self.socketPath = socketPath
    }

    func bind(to session: URLSession) { state.withLock { $0.session = session } }

    /// Sends a command and waits for its reply; a refusal is thrown as a sentence.
    func call(_ command: TransferCommand, timeout: Duration = .seconds(30)) async throws(HTTPLoadError) -> TransferReply {
        try await call(command, over: try await connection(), timeout: timeout)
    }

    private func call(_ command: TransferCommand, over connection: FramedConnection, timeout: Duration = .seconds(30)) async throws(HTTPLoadError) -> TransferReply {
        let serial = state.withLock { state in
            state.serial += 1
            return state.serial
        }
        let payload: Data
        do { payload = try JSONEncoder().encode(TransferCommandEnvelope(serial: serial, command: command)) } catch {
            throw .invalidConfiguration("the command cannot be encoded for the transfer service: \(error)")
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            self?.fail(serial: serial, HTTPLoadError.transferServiceUnavailable("the transfer service did not answer within \(timeout)"))
        }
        defer { timer.cancel() }
        let reply: TransferReply
        do {
            reply = try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.pending[serial] = continuation }
                Task {
                    do { try await connection.send(payload: Array(payload)) } catch {
                        self.fail(serial: serial, HTTPLoadError.transferServiceUnavailable("could not send to the transfer service: \(error)"))
                    }
                }
            }
        } catch let error as HTTPLoadError {
            throw error
        } catch {
            throw .transferServiceUnavailable("\(error)")
        }
        if case .refused(let reason) = reply { throw .transferRefused(reason) }
        return reply
    }

    /// Sends a command whose reply nobody waits for; a failure completes `task` with it.
    func send(_ command: TransferCommand, failing task: URLSessionTask) {
        outstanding {
            do throws(HTTPLoadError) { _ = try await self.call(command) } catch {
                task.update {
                    $0.state = .completed
                    $0.error = error
                }
                let session = self.state.withLock { $0.session }
                if let session, let delegate = session.delegate as? any URLSessionTaskDelegate {
                    delegate.urlSession(session, task: task, didCompleteWithError: error)
                }
            }
        }
    }

    /// Runs `work` as a task ``close()`` waits for (a command sent just before the app lets go).
    private func outstanding(_ work: @escaping @Sendable () async -> Void) {
        let key = UUID()
        let task = Task {
            await work()
            _ = self.state.withLock { $0.outstanding.removeValue(forKey: key) }
        }
        state.withLock { $0.outstanding[key] = task }
    }

    /// The task object for a number, made from the service's status if this process has not
    /// seen it (a task an earlier process started).
    func task(for status: TransferTaskStatus, request original: URLRequest? = nil) -> URLSessionTask {
        state.withLock { state in
            if let known = state.tasks[status.task] { return known }
            let request = original ?? URL(string: status.url).map { URLRequest(url: $0) }
            let made: URLSessionTask = switch status.kind {
            case .download: URLSessionDownloadTask(taskIdentifier: status.task, originalRequest: request, state: status.state.taskState, client: self)
            case .upload: URLSessionUploadTask(taskIdentifier: status.task, originalRequest: request, state: status.state.taskState, client: self)
            }
            made.update {
                $0.countOfBytesReceived = status.bytesReceived
                $0.countOfBytesExpectedToReceive = status.bytesExpected ?? URLSessionTransferSizeUnknown
            }
            state.tasks[status.task] = made
            return made
        }
    }

    /// Closes the connection once the commands already sent are answered; the service goes on
    /// with the tasks.
    func close() async {
        while let next = state.withLock({ $0.outstanding.first?.value }) { await next.value }
        let connection = state.withLock { $0.connection }
        connection?.close()
    }

    // MARK: Connecting

    private func connection() async throws(HTTPLoadError) -> FramedConnection {
        if let open = state.withLock({ $0.connection }) { return open }
        let attempt = connecting.withLock { current in
            if let current { return current }
            let made = Task { try await self.open() }
            current = made
            return made
        }
        do { return try await attempt.value } catch {
            connecting.withLock { $0 = nil }
            throw error as? HTTPLoadError ?? .transferServiceUnavailable("\(error)")
        }
    }

    /// Connects (starting the service if needed), attaches as the session, and reads.
    private func open() async throws -> FramedConnection {
        let connection = try await TransferServiceLauncher.connect(socketPath: socketPath)
        startReading(connection)
        do { _ = try await call(.attach(session: identifier), over: connection) } catch {
            connection.close()
            throw error
        }
        // Only an attached connection is handed to other commands.
        state.withLock { $0.connection = connection }
        return connection
    }

    private func startReading(_ connection: FramedConnection) {
        Task {
            let decoder = JSONDecoder()
            for await frame in connection.frames {
                guard let message = try? decoder.decode(TransferServiceMessage.self, from: Data(buffer: frame)) else { continue }
                switch message {
                case .reply(let serial, let reply):
                    // The tasks the attach names are known before the events that follow it.
                    if case .attached(let statuses) = reply { for status in statuses { _ = task(for: status) } }
                    let waiting = state.withLock { $0.pending.removeValue(forKey: serial) }
                    waiting?.resume(returning: reply)
                case .event(let event):
                    deliver(event)
                }
            }
            let waiting = state.withLock { state in
                state.connection = nil
                defer { state.pending.removeAll() }
                return Array(state.pending.values)
            }
            connecting.withLock { $0 = nil }
            for call in waiting { call.resume(throwing: HTTPLoadError.transferServiceUnavailable("the transfer service closed the connection")) }
        }
    }

    private func fail(serial: Int, _ error: HTTPLoadError) {
        let waiting = state.withLock { $0.pending.removeValue(forKey: serial) }
        waiting?.resume(throwing: error)
    }

    // MARK: Events

    private func deliver(_ event: TransferEvent) {
        let (session, tasks) = state.withLock { ($0.session, $0.tasks) }
        guard let session else { return }
        let delegate = session.delegate
        switch event {
        case .progress(let number, let written, let expected):
            guard let task = tasks[number] else { return }
            let before = task.countOfBytesReceived
            task.update {
                $0.countOfBytesReceived = written
                $0.countOfBytesExpectedToReceive = expected ?? URLSessionTransferSizeUnknown
            }
            if let download = task as? URLSessionDownloadTask, let delegate = delegate as? any URLSessionDownloadDelegate {
                delegate.urlSession(
                    session, downloadTask: download, didWriteData: max(0, written - before), totalBytesWritten: written,
                    totalBytesExpectedToWrite: expected ?? URLSessionTransferSizeUnknown)
            }
        case .finishedDownloading(let number, let location, let head):
            guard let task = tasks[number] else { return }
            task.update { $0.response = head.response(policy: session.configuration.appTransportSecurity) }
            if let download = task as? URLSessionDownloadTask, let delegate = delegate as? any URLSessionDownloadDelegate {
                delegate.urlSession(session, downloadTask: download, didFinishDownloadingTo: URL(fileURLWithPath: location))
            }
        case .received(let number, let head, let body):
            guard let task = tasks[number] else { return }
            task.update { $0.response = head.response(policy: session.configuration.appTransportSecurity) }
            if let delegate = delegate as? any URLSessionDataDelegate {
                delegate.urlSession(session, dataTask: task, didReceive: body)
            }
        case .completed(let number, let reason, let cancelled):
            guard let task = tasks[number] else { return }
            let error: HTTPLoadError? = cancelled ? .cancelled : reason.map { .transferFailed($0) }
            task.update {
                $0.state = .completed
                $0.error = error
            }
            if let delegate = delegate as? any URLSessionTaskDelegate {
                delegate.urlSession(session, task: task, didCompleteWithError: error)
            }
            state.withLock { _ = $0.tasks.removeValue(forKey: number) }
            // Handled: the service may drop the task and its file. A session without a
            // delegate only looks: the events wait for one that has.
            if delegate != nil { outstanding { _ = try? await self.call(.acknowledge(task: number)) } }
        case .eventsDelivered:
            delegate?.urlSessionDidFinishEvents(forBackgroundURLSession: session)
        }
    }
}

extension TransferTaskStatus.State {
    var taskState: URLSessionTask.State {
        switch self {
        case .suspended: .suspended
        case .running: .running
        case .completed: .completed
        }
    }
}
