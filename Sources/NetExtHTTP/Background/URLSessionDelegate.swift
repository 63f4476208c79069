import Foundation

/// What a session tells its delegate (Foundation's `URLSessionDelegate`). Background sessions
/// report through a delegate, since their tasks outlive the code that started them. Every
/// method has a default that does nothing; the calls come one at a time, in order. A completed
/// task's events are delivered once: when the delegate's completion method returns, the
/// transfer service forgets the task (a background session made without a delegate only looks
/// at its tasks, leaving their events for a process that has one).
public protocol URLSessionDelegate: AnyObject, Sendable {
    /// The events that waited for this process when it made the session (tasks that finished
    /// while no process of the session was attached) have all been delivered.
    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession)

    /// A server asked for credentials (a 401 with a Digest or Basic challenge): the disposition, and the
    /// credential to send with `.useCredential`. Asked again, with `previousFailureCount` one
    /// higher, when the server refuses it (5 times at most). The default is
    /// `.performDefaultHandling`: the 401 is the load's answer. Not asked for background tasks.
    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async -> (URLSession.AuthChallengeDisposition, URLCredential?)
}

extension URLSessionDelegate {
    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}

    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        (.performDefaultHandling, nil)
    }
}

/// Task-level events (Foundation's `URLSessionTaskDelegate`).
public protocol URLSessionTaskDelegate: URLSessionDelegate {
    /// The task is over: `error` is nil when it succeeded (an HTTP error status is a success:
    /// the answer is what was asked for), ``HTTPLoadError/cancelled`` when cancelled.
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: HTTPLoadError?)
}

extension URLSessionTaskDelegate {
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: HTTPLoadError?) {}
}

/// An upload task's answer (Foundation's `URLSessionDataDelegate`, the part background upload
/// tasks use).
public protocol URLSessionDataDelegate: URLSessionTaskDelegate {
    /// The answer's body (at most 1 MiB is kept for a background upload).
    func urlSession(_ session: URLSession, dataTask: URLSessionTask, didReceive data: Data)
}

extension URLSessionDataDelegate {
    public func urlSession(_ session: URLSession, dataTask: URLSessionTask, didReceive data: Data) {}
}

/// Download events (Foundation's `URLSessionDownloadDelegate`).
public protocol URLSessionDownloadDelegate: URLSessionTaskDelegate {
    /// The download is complete in the file at `location`. The file is the transfer service's
    /// and is removed once this method returns: move or copy it here.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL)
    /// Progress, at most a few times a second while an app is attached.
    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64)
}

extension URLSessionDownloadDelegate {
    public func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {}
}

/// `NSURLSessionTransferSizeUnknown`: the expected size when the answer did not say.
public let URLSessionTransferSizeUnknown: Int64 = -1
