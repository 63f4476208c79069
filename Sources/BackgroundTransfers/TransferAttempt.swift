import Foundation
import NetExtHTTP

/// One try at a task, with a session made from the settings the app sent: a download goes
/// on from its checkpoint (a Range request with If-Range, RFC 9110 §14.2, §13.1.5) when the
/// partial file and a validator are there; an upload sends its file, read from disk as it goes.
struct TransferAttempt: Sendable {
    /// The task's directory: `download` (the file) and `checkpoint.json` (its resume data).
    let directory: URL
    let session: URLSession

    /// The most of an upload's answer that is kept.
    static let answerLimit = 1 << 20

    init(directory: URL, settings: BackgroundTransferSettings) throws(HTTPLoadError) {
        self.directory = directory
        var configuration = try settings.configuration()
        configuration.maximumResponseBytes = Self.answerLimit
        session = URLSession(configuration: configuration)
    }

    var file: URL { Self.file(in: directory) }
    var checkpoint: URL { directory.appendingPathComponent("checkpoint.json") }

    static func file(in directory: URL) -> URL { directory.appendingPathComponent("download") }

    /// How far the download's file in `directory` got (what a retry starts from).
    static func bytesOnDisk(in directory: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: file(in: directory).path)[.size]) as? Int64) ?? 0
    }

    func download(_ request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(HTTPLoadError) -> TransferOutcome {
        let response: HTTPURLResponse
        if let resume = try? URLSession.resumeData(checkpoint: checkpoint), resume.bytesReceived > 0, resume.partialFile == file {
            response = try await session.download(resumingFrom: resume, request: request, checkpoint: checkpoint, progress: progress).1
        } else {
            try? FileManager.default.removeItem(at: checkpoint)
            response = try await session.download(for: request, to: file, checkpoint: checkpoint, progress: progress).1
        }
        try? FileManager.default.removeItem(at: checkpoint)
        return TransferOutcome(response: TransferResponse(response), location: file.path)
    }

    func upload(_ request: URLRequest, from path: String) async throws(HTTPLoadError) -> TransferOutcome {
        let (data, response) = try await session.upload(for: request, fromFile: URL(fileURLWithPath: path))
        return TransferOutcome(response: TransferResponse(response), body: data)
    }

    func close() async { await session.invalidateAndCancel() }
}
