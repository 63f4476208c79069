import NIOCore

/// A task executor on one SwiftNIO event loop (SE-0417 `TaskExecutor`).
///
/// A session's loads answer on its event loop; a task awaiting them from Swift's global executor
/// crosses threads twice a load (the loop wakes to send, the caller's thread wakes to go on).
/// A task that prefers this executor runs on the loop itself, so a load started there goes out
/// at once and its answer resumes the task without waking another thread — sequential loads
/// run as a one-thread client's do. Give the session the same loop:
///
/// ```swift
/// let loop = MultiThreadedEventLoopGroup.singleton.next()
/// let session = URLSession(configuration: .default, eventLoopGroup: loop)
/// try await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
///     for url in urls { _ = try await session.data(from: url) }
/// }
/// ```
///
/// Work in such a task blocks the loop's I/O while it runs: prefer it for tasks that mostly
/// await loads, not for heavy computation.
public final class EventLoopTaskExecutor: TaskExecutor {
    /// The loop the executor's jobs run on.
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
