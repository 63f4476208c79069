import Foundation
import NIOCore

extension URLSessionStreamTask {
    /// `captureStreams()` (seed 002): the connection as a Foundation `InputStream` and
    /// `OutputStream`, for code written against streams. The task lets go of it: its own reads
    /// and writes fail from now on (TLS started on it stays). The streams block the calling
    /// thread — a read until at least one byte (or end of file), a write until the bytes are
    /// handed to the kernel — so use them from a thread of your own, never from an event loop
    /// or a task that must not wait. `close()` on the input stream closes the reading side; on
    /// the output stream, the writing side (the peer reads end of file).
    public func captureStreams() async throws(HTTPLoadError) -> (InputStream, OutputStream) {
        let (channel, reader) = try await connected()
        let first = captured.withLockedValue { taken -> Bool in
            defer { taken = true }
            return !taken
        }
        guard first else { throw .invalidConfiguration("the stream task's streams were captured already") }
        let what = "\(host):\(port)"
        return (
            StreamTaskInputStream(channel: channel, reader: reader, what: what),
            StreamTaskOutputStream(channel: channel, what: what)
        )
    }
}

/// The reading side of a captured stream task.
final class StreamTaskInputStream: InputStream {
    private let channel: (any Channel)?
    private let reader: StreamReadBuffer?
    private let what: String
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?

    init(channel: any Channel, reader: StreamReadBuffer, what: String) {
        self.channel = channel
        self.reader = reader
        self.what = what
        super.init(data: Data())
    }

    override func open() { if status == .notOpen { status = .open } }

    override func close() {
        guard status != .closed else { return }
        status = .closed
        channel?.close(mode: .input, promise: nil)
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool { status == .open }

    /// Waits for at least one byte (a week at most); 0 at end of file, -1 on failure.
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        guard status == .open, length > 0, let channel, let reader else { return status == .atEnd ? 0 : -1 }
        status = .reading
        do {
            let (data, atEOF) = try reader.read(min: 1, max: length, timeout: .hours(24 * 7), what: what, on: channel.eventLoop).wait()
            data.copyBytes(to: buffer, count: data.count)
            status = data.isEmpty && atEOF ? .atEnd : .open
            return data.count
        } catch {
            failure = error
            status = .error
            return -1
        }
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool { false }
}

/// The writing side of a captured stream task.
final class StreamTaskOutputStream: OutputStream {
    private let channel: (any Channel)?
    private let what: String
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?

    init(channel: any Channel, what: String) {
        self.channel = channel
        self.what = what
        super.init(toMemory: ())
    }

    /// Foundation asks every output stream for this; one made so is not connected to anything.
    required init(toMemory: ()) {
        channel = nil
        what = "nothing"
        super.init(toMemory: ())
    }

    override func open() { if status == .notOpen { status = .open } }

    override func close() {
        guard status != .closed else { return }
        status = .closed
        channel?.close(mode: .output, promise: nil)
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasSpaceAvailable: Bool { status == .open }

    /// Waits until the bytes are handed to the kernel; -1 on failure.
    override func write(_ buffer: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        guard status == .open, let channel else { return -1 }
        guard length > 0 else { return 0 }
        status = .writing
        do {
            try channel.writeAndFlush(ByteBuffer(bytes: UnsafeBufferPointer(start: buffer, count: length))).wait()
            status = .open
            return length
        } catch {
            failure = HTTPLoadError.badServerResponse(url: what, reason: "the write failed: \(error)")
            status = .error
            return -1
        }
    }
}
