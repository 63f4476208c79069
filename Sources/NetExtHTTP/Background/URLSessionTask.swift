import Foundation

/// A background session's task (Foundation's `URLSessionTask`): carried out by the user's
/// transfer service, followed here through the session's delegate.
public class URLSessionTask: @unchecked Sendable {
    // @unchecked: the mutable part is behind `lock`.

    /// Foundation's task states.
    public enum State: Int, Sendable {
        case running, suspended, canceling, completed
    }

    /// The task's number, unique within its session (and kept across the app's restarts).
    public let taskIdentifier: Int
    /// The request the task was made with.
    public let originalRequest: URLRequest?
    private let lock = NSLock()
    private var current: Snapshot
    weak var client: BackgroundTransferClient?

    struct Snapshot {
        var state: State
        var countOfBytesReceived: Int64 = 0
        var countOfBytesExpectedToReceive: Int64 = URLSessionTransferSizeUnknown
        var response: HTTPURLResponse?
        var error: HTTPLoadError?
    }

    init(taskIdentifier: Int, originalRequest: URLRequest?, state: State, client: BackgroundTransferClient?) {
        self.taskIdentifier = taskIdentifier
        self.originalRequest = originalRequest
        current = Snapshot(state: state)
        self.client = client
    }

    public var state: State { lock.withLock { current.state } }
    public var countOfBytesReceived: Int64 { lock.withLock { current.countOfBytesReceived } }
    /// ``URLSessionTransferSizeUnknown`` until the answer says.
    public var countOfBytesExpectedToReceive: Int64 { lock.withLock { current.countOfBytesExpectedToReceive } }
    /// The answer's head, once it has come.
    public var response: HTTPURLResponse? { lock.withLock { current.response } }
    /// Why the task failed, once it has.
    public var error: HTTPLoadError? { lock.withLock { current.error } }

    func update(_ change: (inout Snapshot) -> Void) { lock.withLock { change(&current) } }

    /// Starts (or goes on with) the task. A failure to reach the transfer service is reported
    /// as the task's completion with that error.
    public func resume() {
        update { if $0.state == .suspended { $0.state = .running } }
        client?.send(.resume(task: taskIdentifier), failing: self)
    }

    /// Stops the task; the delegate is told it completed with ``HTTPLoadError/cancelled``.
    public func cancel() {
        update { if $0.state != .completed { $0.state = .canceling } }
        client?.send(.cancel(task: taskIdentifier), failing: self)
    }
}

/// A task whose answer is written to a file (Foundation's `URLSessionDownloadTask`).
public final class URLSessionDownloadTask: URLSessionTask, @unchecked Sendable {}

/// A task that sends a file as its request's body (Foundation's `URLSessionUploadTask`).
public final class URLSessionUploadTask: URLSessionTask, @unchecked Sendable {}
