import ArgumentParser
import Foundation
import NetExtHTTP
import Synchronization

/// `netext http background …`: a background session's tasks, carried out by the user's
/// transfer service (netext-transferd) whether or not this command still runs.
struct HTTPBackgroundCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "background",
        abstract: "Download and upload in a background session: the user's transfer service goes on after the command exits.",
        discussion: """
            A session is named by its identifier (URLSessionConfiguration.background(withIdentifier:)). `download` and \
            `upload` hand a task to netext-transferd (started if it is not running) and return; the service retries \
            after failures and network changes and resumes downloads with Range requests. `collect` takes the \
            session's finished tasks (moving downloads into a directory); `list` only looks.
            """,
        subcommands: [
            HTTPBackgroundDownloadCommand.self, HTTPBackgroundUploadCommand.self, HTTPBackgroundListCommand.self,
            HTTPBackgroundCollectCommand.self, HTTPBackgroundCancelCommand.self,
        ])
}

/// Options of the commands that make tasks.
struct HTTPBackgroundTaskOptions: ParsableArguments {
    @OptionGroup var http: HTTPOptions
    @Option(name: .customLong("resource-time"), help: "Seconds the task may take in all, retries included (default 7 days).")
    var resourceTime: Double?
    @Option(name: .customShort("H"), help: "A header field, 'Name: value' (repeatable).") var header: [String] = []

    func session(_ identifier: String) throws -> URLSession {
        var configuration = try http.sessionConfiguration(verbose: false, base: .background(withIdentifier: identifier))
        if let resourceTime {
            guard resourceTime > 0 else { throw HTTPCommandFailure.usage("--resource-time must be more than 0 seconds") }
            configuration.timeoutIntervalForResource = resourceTime
        }
        return URLSession(configuration: configuration)
    }

    func request(_ text: String, method: String) throws -> URLRequest {
        guard let url = URL(string: text), URLSession.canLoad(url) else { throw HTTPCommandFailure.usage("'\(text)' is not an http or https URL with a host") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        for line in header {
            guard let colon = line.firstIndex(of: ":") else { throw HTTPCommandFailure.usage("-H '\(line)' is not 'Name: value'") }
            request.setValue(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces), forHTTPHeaderField: String(line[..<colon]))
        }
        return request
    }
}

struct HTTPBackgroundDownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "download", abstract: "Hand a download to the transfer service and return.")
    @OptionGroup var options: HTTPBackgroundTaskOptions
    @Argument(help: "The session identifier.") var session: String
    @Argument(help: "The URL.") var url: String

    func run() async throws {
        do {
            let background = try options.session(session)
            let task: URLSessionDownloadTask
            do { task = try await background.downloadTask(with: options.request(url, method: "GET")) } catch let error as HTTPLoadError {
                throw HTTPCommandFailure.load(error)
            }
            task.resume()
            print("task \(task.taskIdentifier): downloading \(url) in session \(session)")
            await background.finishTasksAndInvalidate()
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }
}

struct HTTPBackgroundUploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "upload", abstract: "Hand an upload of a file to the transfer service and return.")
    @OptionGroup var options: HTTPBackgroundTaskOptions
    @Option(name: .customLong("file"), help: "The file to send as the body.") var file: String
    @Option(name: .customShort("X"), help: "The method (default POST).") var method = "POST"
    @Argument(help: "The session identifier.") var session: String
    @Argument(help: "The URL.") var url: String

    func run() async throws {
        do {
            let background = try options.session(session)
            let path = URL(fileURLWithPath: file).standardizedFileURL
            let task: URLSessionUploadTask
            do { task = try await background.uploadTask(with: options.request(url, method: method), fromFile: path) } catch let error as HTTPLoadError {
                throw HTTPCommandFailure.load(error)
            }
            task.resume()
            print("task \(task.taskIdentifier): uploading \(path.path) to \(url) in session \(session)")
            await background.finishTasksAndInvalidate()
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }
}

struct HTTPBackgroundListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Show a session's tasks (their events stay for `collect`).")
    @Argument(help: "The session identifier.") var session: String

    func run() async throws {
        let background = URLSession(configuration: .background(withIdentifier: session))
        let tasks: [URLSessionTask]
        do { tasks = try await background.allTasks() } catch {
            throw HTTPCommandFailure.load(error).exit()
        }
        await background.finishTasksAndInvalidate()
        guard !tasks.isEmpty else {
            print("session \(session) has no tasks")
            return
        }
        let rows = tasks.map { task -> [String] in
            let expected = task.countOfBytesExpectedToReceive
            return [
                "\(task.taskIdentifier)", task is URLSessionUploadTask ? "upload" : "download", "\(task.state)",
                expected >= 0 ? "\(task.countOfBytesReceived)/\(expected)" : "\(task.countOfBytesReceived)",
                task.originalRequest?.url.absoluteString ?? "",
            ]
        }
        print(TextTable.render(header: ["TASK", "KIND", "STATE", "BYTES", "URL"], rows: rows))
    }
}

struct HTTPBackgroundCollectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collect", abstract: "Take a session's finished tasks: downloads are moved into a directory, each result printed.")
    @Option(name: .customLong("into"), help: "Where finished downloads go (named after the URL's last path component, else task-N).")
    var directory: String = "."
    @Option(name: .customLong("wait"), help: "Also wait up to this many seconds for the session's running tasks to finish.")
    var wait: Double = 0
    @Argument(help: "The session identifier.") var session: String

    func run() async throws {
        let into = URL(fileURLWithPath: directory)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: into.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HTTPCommandFailure.usage("--into \(directory) is not a directory").exit()
        }
        let collector = BackgroundCollector(into: into)
        let background = URLSession(configuration: .background(withIdentifier: session), delegate: collector)
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, wait) * 1000))
        // The events that waited come first; then, with --wait, the running tasks' completions.
        while !collector.replayed, ContinuousClock.now < deadline + .seconds(10) { try await Task.sleep(for: .milliseconds(50)) }
        guard collector.replayed else { throw HTTPCommandFailure.load(.transferServiceUnavailable("no answer from the transfer service")).exit() }
        while wait > 0, ContinuousClock.now < deadline {
            let running: [URLSessionTask]
            do { running = try await background.allTasks().filter { $0.state != .completed } } catch {
                throw HTTPCommandFailure.load(error).exit()
            }
            if running.isEmpty { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        await background.finishTasksAndInvalidate()  // the acknowledgements go out first
        let (completed, failed) = collector.counts
        print("session \(session): collected=\(completed) failed=\(failed)")
        if failed > 0 { throw ExitCode(5) }
    }
}

/// Moves each finished download into a directory and prints each task's end.
final class BackgroundCollector: URLSessionDownloadDelegate, URLSessionDataDelegate {
    private let into: URL
    private let state = Mutex((replayed: false, completed: 0, failed: 0))

    init(into: URL) { self.into = into }

    var replayed: Bool { state.withLock { $0.replayed } }
    var counts: (Int, Int) { state.withLock { ($0.completed, $0.failed) } }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let name = downloadTask.originalRequest?.url.lastPathComponent ?? ""
        let target = into.appendingPathComponent(name.isEmpty || name == "/" ? "task-\(downloadTask.taskIdentifier)" : name)
        try? FileManager.default.removeItem(at: target)
        do {
            try FileManager.default.moveItem(at: location, to: target)
            let size = (try? FileManager.default.attributesOfItem(atPath: target.path)[.size] as? Int64) ?? 0
            print("task \(downloadTask.taskIdentifier): \(downloadTask.response?.statusCode ?? 0) → \(target.path) (\(size) bytes)")
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code
            print("task \(downloadTask.taskIdentifier): cannot move the file to \(target.path): \(code.map { String(cString: strerror(Int32($0))) } ?? "\(error)")")
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionTask, didReceive data: Data) {
        print("task \(dataTask.taskIdentifier): \(dataTask.response?.statusCode ?? 0), \(data.count) bytes of answer")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: HTTPLoadError?) {
        state.withLock { error == nil ? ($0.completed += 1) : ($0.failed += 1) }
        if let error { print("task \(task.taskIdentifier) failed: \(error.description)") }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {
        state.withLock { $0.replayed = true }
    }
}

struct HTTPBackgroundCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel a task; `collect` reports it cancelled.")
    @Argument(help: "The session identifier.") var session: String
    @Argument(help: "The task number (`list` shows them).") var task: Int

    func run() async throws {
        let background = URLSession(configuration: .background(withIdentifier: session))
        let tasks: [URLSessionTask]
        do { tasks = try await background.allTasks() } catch {
            throw HTTPCommandFailure.load(error).exit()
        }
        guard let found = tasks.first(where: { $0.taskIdentifier == task }) else {
            throw HTTPCommandFailure.usage("session \(session) has no task \(task)").exit()
        }
        found.cancel()
        await background.finishTasksAndInvalidate()
        print("task \(task): cancelled")
    }
}
