import Foundation

extension URLSession {
    /// `downloadTask(with:)` of a background session: the transfer service makes the task
    /// (suspended, as Foundation's); ``URLSessionTask/resume()`` starts it. Its file reaches the
    /// delegate's ``URLSessionDownloadDelegate/urlSession(_:downloadTask:didFinishDownloadingTo:)``
    /// in whichever process of the session is attached when it finishes.
    public func downloadTask(with request: URLRequest) async throws(HTTPLoadError) -> URLSessionDownloadTask {
        let status = try await create(TransferSpec.Kind.download, request, uploadFile: nil)
        guard let task = status as? URLSessionDownloadTask else { throw .transferRefused("the service made another kind of task") }
        return task
    }

    public func downloadTask(with url: URL) async throws(HTTPLoadError) -> URLSessionDownloadTask {
        try await downloadTask(with: URLRequest(url: url))
    }

    /// `uploadTask(with:fromFile:)` of a background session: the service sends `file` as the
    /// body, read from disk as it goes (from the start again on each attempt); the answer reaches
    /// ``URLSessionDataDelegate/urlSession(_:dataTask:didReceive:)``.
    public func uploadTask(with request: URLRequest, fromFile file: URL) async throws(HTTPLoadError) -> URLSessionUploadTask {
        let status = try await create(TransferSpec.Kind.upload, request, uploadFile: file.path)
        guard let task = status as? URLSessionUploadTask else { throw .transferRefused("the service made another kind of task") }
        return task
    }

    /// `getAllTasks`: the session's tasks the service holds (running, suspended, or completed
    /// with events not yet delivered).
    public func allTasks() async throws(HTTPLoadError) -> [URLSessionTask] {
        let background = try backgroundClient()
        guard case .tasks(let statuses) = try await background.call(.list) else { return [] }
        return statuses.map { status in
            let task = background.task(for: status)
            task.update {
                $0.countOfBytesReceived = status.bytesReceived
                $0.countOfBytesExpectedToReceive = status.bytesExpected ?? URLSessionTransferSizeUnknown
            }
            return task
        }
    }

    /// Lets go of the transfer service once the commands already given (a task's `resume()`,
    /// `cancel()`, a delivered completion) are answered; the tasks go on (Foundation's
    /// `finishTasksAndInvalidate` for a background session, which does not wait).
    public func finishTasksAndInvalidate() async {
        pool.trustJudge.clear()
        await background?.close()
    }

    private func create(_ kind: TransferSpec.Kind, _ request: URLRequest, uploadFile: String?) async throws(HTTPLoadError) -> URLSessionTask {
        let background = try backgroundClient()
        guard Self.canLoad(request.url) else { throw .invalidURL(request.url.absoluteString) }
        let settings = try BackgroundTransferSettings(configuration, appIdentifier: background.identifier)
        let spec = TransferSpec(kind: kind, request: request, uploadFile: uploadFile, settings: settings)
        guard case .created(let status) = try await background.call(.create(spec)) else {
            throw .transferRefused("the service did not make the task")
        }
        return background.task(for: status, request: request)
    }

    private func backgroundClient() throws(HTTPLoadError) -> BackgroundTransferClient {
        guard let background else {
            throw .invalidConfiguration("tasks that outlive the app need a session made with URLSessionConfiguration.background(withIdentifier:)")
        }
        return background
    }
}
