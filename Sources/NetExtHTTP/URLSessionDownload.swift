import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// What a download needs to go on where it stopped (Foundation's resume data): the URL, the
/// partial file, how much of it is there, and the validator that proves the server still has
/// the same resource (RFC 9110 §13.1.5, If-Range).
public struct DownloadResumeData: Sendable, Codable, Equatable {
    public var url: URL
    public var partialFile: URL
    public var bytesReceived: Int64
    /// The entity tag, else the Last-Modified date, of the first answer.
    public var validator: String
}

extension URLSession {
    /// `download(for:)`: the body written to a file as it arrives (no size limit but the disk's),
    /// `progress` called with the bytes so far and the expected total. The file is
    /// `destination` or a new one in the temporary directory; the caller owns it.
    ///
    /// A download that breaks off after some bytes of a body with a validator (ETag or
    /// Last-Modified) fails with ``HTTPLoadError/interrupted(reason:resumeData:)``; give that
    /// resume data to ``download(resumingFrom:progress:)`` to go on.
    ///
    /// With a `checkpoint` file, the resume data is written there (JSON, mode 0600) as soon as the
    /// answer's head has come, so that a process killed mid-download can go on from it: the
    /// bytes already in the file are what counts (``resumeData(checkpoint:)``).
    public func download(
        for request: URLRequest, to destination: URL? = nil, checkpoint: URL? = nil, progress: (@Sendable (Int64, Int64?) -> Void)? = nil
    ) async throws(HTTPLoadError) -> (URL, HTTPURLResponse) {
        let file = destination ?? FileManager.default.temporaryDirectory.appendingPathComponent("netext-download-\(UUID().uuidString)")
        return try await transfer(request, into: file, from: 0, validator: nil, checkpoint: checkpoint, progress: progress)
    }

    /// The resume data a checkpoint file holds, its byte count taken from the partial file as
    /// it is on disk (what a killed process managed to write); nil when there is none.
    public static func resumeData(checkpoint: URL) throws(HTTPLoadError) -> DownloadResumeData? {
        guard let saved = FileManager.default.contents(atPath: checkpoint.path) else { return nil }
        guard var data = try? JSONDecoder().decode(DownloadResumeData.self, from: saved) else {
            throw .invalidConfiguration("\(checkpoint.path) is not download resume data; remove it to start over")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: data.partialFile.path)[.size] as? Int64) ?? nil
        data.bytesReceived = size ?? 0
        return data
    }

    /// Goes on with an interrupted download: a Range request for the rest (RFC 9110 §14.2)
    /// with If-Range, so that a changed resource is sent whole (200) and the file restarted.
    /// With a `checkpoint`, it is rewritten when the answer's head comes (a changed resource's
    /// new validator).
    public func download(
        resumingFrom resume: DownloadResumeData, request original: URLRequest? = nil, checkpoint: URL? = nil, progress: (@Sendable (Int64, Int64?) -> Void)? = nil
    ) async throws(HTTPLoadError) -> (URL, HTTPURLResponse) {
        var request = original ?? URLRequest(url: resume.url)
        request.url = resume.url
        request.setValue("bytes=\(resume.bytesReceived)-", forHTTPHeaderField: "Range")
        request.setValue(resume.validator, forHTTPHeaderField: "If-Range")
        return try await transfer(request, into: resume.partialFile, from: resume.bytesReceived, validator: resume.validator, checkpoint: checkpoint, progress: progress)
    }

    private func transfer(
        _ request: URLRequest, into file: URL, from offset: Int64, validator: String?, checkpoint: URL?, progress: (@Sendable (Int64, Int64?) -> Void)?
    ) async throws(HTTPLoadError) -> (URL, HTTPURLResponse) {
        let writer: DownloadFile
        do { writer = try DownloadFile(file, keepingFirst: offset) } catch {
            throw .invalidConfiguration("cannot write the download to \(file.path): \(error)")
        }
        defer { writer.close() }
        let sink = BodySink(write: { bytes in try writer.append(bytes) }, restart: { try writer.restart() }, progress: progress)
        sink.received = offset
        sink.validator = validator
        if let checkpoint {
            let url = request.url
            sink.onHead = { [unowned sink] in
                guard let validator = sink.validator,
                    let encoded = try? JSONEncoder().encode(DownloadResumeData(url: url, partialFile: file, bytesReceived: 0, validator: validator))
                else { return }
                _ = FileManager.default.createFile(atPath: checkpoint.path, contents: encoded, attributes: [.posixPermissions: 0o600])
            }
        }
        let response: HTTPURLResponse
        do {
            response = try await perform(request, sink: sink).1
        } catch {
            if let validator = sink.validator, sink.received > 0, !Self.isATSOrFilter(error) {
                throw .interrupted(reason: error.description, resumeData: DownloadResumeData(url: request.url, partialFile: file, bytesReceived: sink.received, validator: validator))
            }
            throw error
        }
        // A 206 is the rest from where the file ends (RFC 9110 §14.4 Content-Range); a 200 to a
        // range request (the resource changed, or no ranges) restarted the file at its head.
        if response.statusCode == 206 {
            guard let range = response.value(forHTTPHeaderField: "Content-Range"), range.hasPrefix("bytes \(offset)-") else {
                throw .badServerResponse(url: request.url.absoluteString, reason: "its 206 answer's Content-Range is not from byte \(offset)")
            }
        }
        return (file, response)
    }

    private static func isATSOrFilter(_ error: HTTPLoadError) -> Bool {
        switch error {
        case .refused, .deniedByURLFilter: true
        default: false
        }
    }
}

/// A download's file: kept up to `keepingFirst` bytes (a resumed download's part), appended to;
/// `restart()` empties it (a whole answer came for a range request).
final class DownloadFile: @unchecked Sendable {
    // @unchecked: written on one event loop at a time, opened and closed by the task.
    private let descriptor: Int32

    init(_ url: URL, keepingFirst bytes: Int64) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXFailure(call: "open") }
        guard ftruncate(descriptor, off_t(bytes)) == 0, lseek(descriptor, off_t(bytes), SEEK_SET) >= 0 else {
            _ = Glibc.close(descriptor)
            throw POSIXFailure(call: "truncate")
        }
        self.descriptor = descriptor
    }

    func restart() throws {
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) >= 0 else { throw POSIXFailure(call: "truncate") }
    }

    func append(_ bytes: ByteBuffer) throws {
        try bytes.withUnsafeReadableBytes { buffer in try POSIXFailure.writeAll(buffer, to: descriptor, what: "the download") }
    }

    func close() { _ = Glibc.close(descriptor) }
}
