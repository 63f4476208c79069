import Foundation
import GRDB
import Synchronization
import Testing

@testable import BackgroundTransfers
@testable import NetExtHTTP

/// Records what a background session tells its delegate.
final class RecordingDelegate: URLSessionDownloadDelegate, URLSessionDataDelegate {
    struct Finished: Sendable {
        var task: Int
        var bytes: [UInt8]
        var status: Int?
    }
    let finished = Mutex<[Finished]>([])
    let completed = Mutex<[(Int, HTTPLoadError?)]>([])
    let received = Mutex<[(Int, Data)]>([])
    let replays = Atomic<Int>(0)

    func urlSession(_ session: NetExtHTTP.URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        // The file is the service's until this returns: read it now, as an app would move it.
        let bytes = (try? Data(contentsOf: location)).map(Array.init) ?? []
        finished.withLock { $0.append(Finished(task: downloadTask.taskIdentifier, bytes: bytes, status: downloadTask.response?.statusCode)) }
    }

    func urlSession(_ session: NetExtHTTP.URLSession, dataTask: URLSessionTask, didReceive data: Data) {
        received.withLock { $0.append((dataTask.taskIdentifier, data)) }
    }

    func urlSession(_ session: NetExtHTTP.URLSession, task: URLSessionTask, didCompleteWithError error: HTTPLoadError?) {
        completed.withLock { $0.append((task.taskIdentifier, error)) }
    }

    func urlSessionDidFinishEvents(forBackgroundURLSession session: NetExtHTTP.URLSession) {
        replays.add(1, ordering: .relaxed)
    }

    func completion(of task: Int) -> (Int, HTTPLoadError?)? { completed.withLock { $0.first { $0.0 == task } } }
}

/// The transfer service in this process on a socket of its own, with a fast retry policy.
struct ServiceUnderTest {
    let directory: URL
    let store: TransferStore
    let service: TransferService
    let server: TransferServer
    var socket: String { server.path }

    static func start() async throws -> ServiceUnderTest {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-transfers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try TransferStore(path: directory.appendingPathComponent("transfers.sqlite").path)
        let service = TransferService(
            store: store, directory: directory.appendingPathComponent("tasks"), policy: TransferRetryPolicy(firstDelay: 0.05, maximumDelay: 0.2),
            log: { _ in })
        try await service.start()
        let server = try await TransferServer.start(path: directory.appendingPathComponent("run/transfers.sock").path, service: service, log: { _ in })
        return ServiceUnderTest(directory: directory, store: store, service: service, server: server)
    }

    func session(_ identifier: String, delegate: (any URLSessionDelegate)?, edit: (inout NetExtHTTP.URLSessionConfiguration) -> Void = { _ in })
        -> NetExtHTTP.URLSession
    {
        var configuration = NetExtHTTP.URLSessionConfiguration.background(withIdentifier: identifier)
        configuration.transferServiceSocket = socket
        configuration.appTransportSecurity.allowsLocalNetworking = true
        configuration.urlFilter = nil
        edit(&configuration)
        return NetExtHTTP.URLSession(configuration: configuration, delegate: delegate)
    }

    func stop() async {
        await server.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Waits (at most `seconds`) until `condition` holds.
func eventually(_ seconds: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

@Suite("Background sessions through the transfer service")
struct BackgroundTransferTests {
    @Test("a download cut mid-answer is resumed with a Range request by the service and delivered once, byte-identical")
    func resumedDownload() async throws {
        let server = try await LoopbackHTTPServer()
        let service = try await ServiceUnderTest.start()
        let delegate = RecordingDelegate()
        let session = service.session("com.example.sync", delegate: delegate)
        let task = try await session.downloadTask(with: URL(string: "http://127.0.0.1:\(server.port)/cut")!)
        #expect(task.state == .suspended)
        task.resume()
        #expect(await eventually { delegate.completion(of: task.taskIdentifier) != nil })
        let (_, error) = try #require(delegate.completion(of: task.taskIdentifier))
        #expect(error == nil)
        let finished = delegate.finished.withLock { $0 }
        #expect(finished.count == 1 && finished.first?.task == task.taskIdentifier)
        #expect(finished.first?.bytes == LoopbackHTTPServer.file)
        #expect(finished.first?.status == 206)
        // Acknowledged: the record and the file go.
        #expect(await eventually { (try? service.store.records(session: "com.example.sync").isEmpty) == true })
        #expect(await eventually { !FileManager.default.fileExists(atPath: service.directory.appendingPathComponent("tasks/\(task.taskIdentifier)").path) })
        await session.finishTasksAndInvalidate()
        await service.stop()
        try await server.close()
    }

    @Test("a task finished while no app was attached waits for the next process of the session, then the replay ends")
    func eventsWaitForTheApp() async throws {
        let server = try await LoopbackHTTPServer()
        let service = try await ServiceUnderTest.start()
        let first = service.session("com.example.later", delegate: nil)
        let task = try await first.downloadTask(with: URL(string: "http://127.0.0.1:\(server.port)/file")!)
        task.resume()
        await first.finishTasksAndInvalidate()
        #expect(await eventually { (try? service.store.record(task.taskIdentifier)?.state) == .completed })

        // Another session's process sees nothing of it.
        let stranger = RecordingDelegate()
        let other = service.session("com.example.other", delegate: stranger)
        #expect(try await other.allTasks().isEmpty)
        #expect(await eventually { stranger.replays.load(ordering: .relaxed) == 1 })
        #expect(stranger.completed.withLock { $0.isEmpty })

        let delegate = RecordingDelegate()
        let relaunched = service.session("com.example.later", delegate: delegate)
        #expect(await eventually { delegate.replays.load(ordering: .relaxed) == 1 })
        #expect(delegate.finished.withLock { $0.first?.bytes } == LoopbackHTTPServer.file)
        #expect(delegate.completion(of: task.taskIdentifier).map { $0.1 == nil } == true)
        #expect(await eventually { (try? service.store.records(session: "com.example.later").isEmpty) == true })
        await relaunched.finishTasksAndInvalidate()
        await other.finishTasksAndInvalidate()
        await service.stop()
        try await server.close()
    }

    @Test("failures another attempt would repeat end the task at once; cancel ends a load that hangs; uploads send their file")
    func failuresCancelAndUpload() async throws {
        let server = try await LoopbackHTTPServer()
        let service = try await ServiceUnderTest.start()
        let delegate = RecordingDelegate()
        let session = service.session("com.example.mixed", delegate: delegate)

        // ATS refuses cleartext to a name that is not local, before any connection is made.
        let refused = try await session.downloadTask(with: URL(string: "http://downloads.example.test/file")!)
        refused.resume()
        #expect(await eventually { delegate.completion(of: refused.taskIdentifier) != nil })
        let refusal = try #require(delegate.completion(of: refused.taskIdentifier)?.1)
        #expect(refusal.description.contains("cleartext HTTP"))
        #expect(try service.store.record(refused.taskIdentifier) == nil || refused.state == .completed)

        let hanging = try await session.downloadTask(with: URL(string: "http://127.0.0.1:\(server.port)/slow")!)
        hanging.resume()
        try await Task.sleep(for: .milliseconds(200))
        hanging.cancel()
        #expect(await eventually { delegate.completion(of: hanging.taskIdentifier) != nil })
        #expect(delegate.completion(of: hanging.taskIdentifier)?.1 == .cancelled)

        let file = service.directory.appendingPathComponent("body.bin")
        try Data(repeating: 0x5a, count: 70_000).write(to: file)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/method")!)
        request.httpMethod = "PUT"
        let upload = try await session.uploadTask(with: request, fromFile: file)
        upload.resume()
        #expect(await eventually { delegate.completion(of: upload.taskIdentifier) != nil })
        #expect(delegate.completion(of: upload.taskIdentifier)?.1 == nil)
        #expect(delegate.received.withLock { $0.first { $0.0 == upload.taskIdentifier }?.1 } == Data("PUT 70000".utf8))

        // Refusals are sentences: a file the service cannot read, a task of another session.
        await #expect(throws: HTTPLoadError.transferRefused("the upload file /nowhere/body.bin cannot be read")) {
            _ = try await session.uploadTask(with: request, fromFile: URL(fileURLWithPath: "/nowhere/body.bin"))
        }
        let other = service.session("com.example.elsewhere", delegate: nil)
        await #expect(throws: HTTPLoadError.transferRefused("this session has no task \(upload.taskIdentifier)")) {
            _ = try await other.allTasks()
            let background = try #require(other.background)
            _ = try await background.call(.cancel(task: upload.taskIdentifier))
        }
        await other.finishTasksAndInvalidate()
        await session.finishTasksAndInvalidate()
        await service.stop()
        try await server.close()
    }

    @Test("invalidateAndCancel cancels a background session's tasks, the suspended and the running")
    func invalidateAndCancel() async throws {
        let server = try await LoopbackHTTPServer()
        let service = try await ServiceUnderTest.start()
        let delegate = RecordingDelegate()
        let session = service.session("com.example.cancel", delegate: delegate)
        let hanging = try await session.downloadTask(with: URL(string: "http://127.0.0.1:\(server.port)/slow")!)
        hanging.resume()
        let waiting = try await session.downloadTask(with: URL(string: "http://127.0.0.1:\(server.port)/file")!)
        try await Task.sleep(for: .milliseconds(200))
        await session.invalidateAndCancel()
        // Both completions reached the delegate before the session let go, and were taken.
        #expect(delegate.completion(of: hanging.taskIdentifier)?.1 == .cancelled)
        #expect(delegate.completion(of: waiting.taskIdentifier)?.1 == .cancelled)
        let relaunched = service.session("com.example.cancel", delegate: RecordingDelegate())
        #expect(try await relaunched.allTasks().isEmpty)
        await relaunched.finishTasksAndInvalidate()
        await service.stop()
        try await server.close()
    }

    @Test("the store keeps tasks across a reopen and names a task whose record is damaged")
    func storeSurvivesReopen() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("netext-store-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = NetExtHTTP.URLSessionConfiguration.background(withIdentifier: "s")
        configuration.urlFilter = nil
        let spec = TransferSpec(kind: .download, request: URLRequest(url: URL(string: "https://a.test/x")!), settings: try BackgroundTransferSettings(configuration, appIdentifier: "s"))
        let made = try TransferStore(path: path).insert(session: "s", spec: spec)
        let store = try TransferStore(path: path)
        try store.setState(made.id, .running)
        try store.noteRetry(made.id, error: "Cannot connect to a.test: refused.", bytesReceived: 42)
        let reopened = try TransferStore(path: path)
        let record = try #require(try reopened.record(made.id))
        #expect(record.spec == spec && record.state == .running && record.retries == 1 && record.bytesReceived == 42)
        #expect(try reopened.running().map(\.id) == [made.id])
        try reopened.complete(made.id, outcome: TransferOutcome(error: "gave up"))
        #expect(try TransferStore(path: path).record(made.id)?.outcome?.error == "gave up")

        // A record damaged on disk is refused with the task named, not read as something else.
        try DatabaseQueue(path: path).write { db in try db.execute(sql: "UPDATE transfer_task SET spec = x'7b7d'") }
        #expect(throws: TransferServiceError.self) { try TransferStore(path: path).record(made.id) }
        do { _ = try TransferStore(path: path).record(made.id) } catch {
            #expect(error.description == "The transfer store failed: task \(made.id)'s request in the store cannot be read.")
        }
    }

    @Test("commands decode or are refused with the key at fault; 3000 damaged frames never crash the decoder")
    func commandDecoding() throws {
        var configuration = NetExtHTTP.URLSessionConfiguration.background(withIdentifier: "s")
        configuration.urlFilter = nil
        let spec = TransferSpec(kind: .upload, request: URLRequest(url: URL(string: "https://a.test/up")!), uploadFile: "/tmp/f", settings: try BackgroundTransferSettings(configuration, appIdentifier: "s"))
        let commands: [TransferCommand] = [.attach(session: "s"), .create(spec), .resume(task: 3), .cancel(task: 4), .acknowledge(task: 5), .list]
        for command in commands {
            let encoded = try JSONEncoder().encode(TransferCommandEnvelope(serial: 9, command: command))
            #expect(try JSONDecoder().decode(TransferCommandEnvelope.self, from: encoded) == TransferCommandEnvelope(serial: 9, command: command))
        }
        let missing = Data(#"{"serial": 1, "command": {"resume": {}}}"#.utf8)
        do { _ = try JSONDecoder().decode(TransferCommandEnvelope.self, from: missing) } catch {
            #expect(TransferLink.reason(error) == "'command.resume.task' is missing")
        }
        let wrongType = Data(#"{"serial": "one", "command": {"list": {}}}"#.utf8)
        do { _ = try JSONDecoder().decode(TransferCommandEnvelope.self, from: wrongType) } catch {
            #expect(TransferLink.reason(error).hasPrefix("'serial' has the wrong type"))
        }
        var generator = SystemRandomNumberGenerator()
        let valid = Array(try JSONEncoder().encode(TransferCommandEnvelope(serial: 1, command: .create(spec))))
        var refused = 0
        for _ in 0..<3000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: index)
                default: bytes = Array(bytes.prefix(index))
                }
                if bytes.isEmpty { break }
            }
            do { _ = try JSONDecoder().decode(TransferCommandEnvelope.self, from: Data(bytes)) } catch {
                refused += 1
                #expect(!TransferLink.reason(error).isEmpty)
            }
        }
        #expect(refused > 0)
    }

    @Test("the retry waits double up to the cap; only failures the network may cure are retried")
    func retryPolicy() {
        let policy = TransferRetryPolicy(firstDelay: 1, maximumDelay: 30)
        #expect((1...7).map { policy.delay(afterFailures: $0) } == [1, 2, 4, 8, 16, 30, 30])
        #expect(policy.delay(afterFailures: 1000) == 30)
        #expect(TransferRetryPolicy.isRetryable(.cannotConnect(host: "h", reason: "r")))
        #expect(TransferRetryPolicy.isRetryable(.timedOut(url: "u", seconds: 1)))
        #expect(!TransferRetryPolicy.isRetryable(.tlsFailed(host: "h", reason: "r")))
        #expect(!TransferRetryPolicy.isRetryable(.deniedByURLFilter(url: "u", reason: "r")))
    }
}
