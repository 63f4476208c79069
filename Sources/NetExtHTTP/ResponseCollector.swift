import NIOCore
import NIOHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// Where a streamed body goes (a download's file): called on the event loop with each part of a
/// 2xx answer's body; the answer's other bodies (redirects, errors) stay in memory.
final class BodySink: @unchecked Sendable {
    // @unchecked: used by one exchange at a time, on its channel's event loop.
    let write: (ByteBuffer) throws -> Void
    /// Starts the body over (a whole answer, 200, came for a range request).
    let restart: () throws -> Void
    let progress: (@Sendable (_ received: Int64, _ expected: Int64?) -> Void)?
    /// Bytes of the body written so far, and the length the head announced.
    var received: Int64 = 0
    var expected: Int64?
    /// The answer's entity tag, else its Last-Modified date: what a resumed download's If-Range sends.
    var validator: String?
    /// Called once the head of the answer whose body is written has come (a download writes its
    /// checkpoint then).
    var onHead: (() -> Void)?

    init(write: @escaping (ByteBuffer) throws -> Void, restart: @escaping () throws -> Void, progress: (@Sendable (Int64, Int64?) -> Void)?) {
        self.write = write
        self.restart = restart
        self.progress = progress
    }
}

/// A request as it goes on the wire (HTTP/1.1 message parts; HTTP/2 streams translate them).
struct PreparedRequest: Sendable {
    /// A file sent as the body, `length` bytes from its start.
    struct BodyFile: Sendable {
        var path: String
        var length: Int64
    }
    var head: HTTPRequestHead
    var body: ByteBuffer?
    var bodyFile: BodyFile? = nil
    /// The URL, for messages.
    var url: String
    /// Told the bytes of the body sent so far and the total (an upload's progress).
    var uploadProgress: (@Sendable (_ sent: Int64, _ total: Int64) -> Void)?
}

/// A response as it came off the wire.
struct RawResponse: Sendable {
    var head: HTTPResponseHead
    var body: ByteBuffer
}

/// Sends one request at a time on an HTTP/1.1 connection and gathers the answer
/// (``AnswerAssembly``: interim 1xx heads skipped, the body held up to a limit).
final class ResponseCollector: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // @unchecked: every member is touched only on the channel's event loop.
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private var context: ChannelHandlerContext?
    private var pending: AnswerAssembly?
    /// The exchange in progress (a body file's sender checks it is still the one).
    private var pendingFuture: EventLoopFuture<RawResponse>? { pending?.promise.futureResult }
    /// Bytes of the answer seen so far (a connection that failed after some cannot be retried).
    private(set) var sawAnswerBytes = false

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        fail(HTTPLoadError.cannotConnect(host: pending?.url ?? "the server", reason: "the connection was taken down"))
    }

    /// Writes `request` and answers `promise` with the response. Call on the event loop.
    func send(_ request: PreparedRequest, limit: Int, sink: BodySink? = nil, activity: AnswerActivity? = nil, promise: EventLoopPromise<RawResponse>) {
        guard let context, context.channel.isActive else {
            promise.fail(ConnectionClosedBeforeAnswer(url: request.url))
            return
        }
        sawAnswerBytes = false
        pending = AnswerAssembly(promise: promise, url: request.url, limit: limit, sink: sink, activity: activity)
        context.write(wrapOutboundOut(.head(request.head)), promise: nil)
        if var body = request.body {
            if let progress = request.uploadProgress {
                // In 64 KiB slices, each reported once the channel has taken it.
                let total = Int64(body.readableBytes)
                var sent: Int64 = 0
                while let slice = body.readSlice(length: min(64 << 10, body.readableBytes)), slice.readableBytes > 0 {
                    sent += Int64(slice.readableBytes)
                    let count = sent
                    context.write(wrapOutboundOut(.body(.byteBuffer(slice)))).whenSuccess { progress(count, total) }
                }
            } else {
                context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            }
        } else if let file = request.bodyFile {
            sendFile(file, context: context, progress: request.uploadProgress)
            return
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Sends a body file in 64 KiB pieces, each read once the channel has taken the one
    /// before (page-cache reads on the event loop, as downloads write), then the end. A file
    /// that ends early or cannot be read fails the exchange naming the offset.
    private func sendFile(_ file: PreparedRequest.BodyFile, context: ChannelHandlerContext, progress: (@Sendable (Int64, Int64) -> Void)?) {
        let exchange = pendingFuture
        FileBodySender.open(
            file, allocator: context.channel.allocator, progress: progress,
            isCurrent: { [weak self] in context.channel.isActive && self?.isPending(exchange) == true },
            write: { [self] chunk in context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(chunk)))) },
            end: { [self] in context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil) },
            fail: { [weak self] error in self?.failBody(error, context: context) })
    }

    /// Whether `future` is still the exchange in progress (a body file's sender stops otherwise).
    private func isPending(_ future: EventLoopFuture<RawResponse>?) -> Bool {
        guard let pending, let future else { return false }
        return pending.promise.futureResult === future
    }

    private func failBody(_ error: any Error, context: ChannelHandlerContext) {
        fail(error)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard pending != nil else { return }
        sawAnswerBytes = true
        let failure: (any Error)?
        switch unwrapInboundIn(data) {
        case .head(let head): failure = pending!.received(head)
        case .body(var part): failure = pending!.received(&part)
        case .end:
            let current = pending!
            pending = nil
            current.finish()
            return
        }
        if let failure {
            fail(failure)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let current = pending {
            fail(sawAnswerBytes
                ? HTTPLoadError.badServerResponse(url: current.url, reason: "the connection closed in the middle of the answer")
                : ConnectionClosedBeforeAnswer(url: current.url))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let current = pending {
            if error is HTTPParserError {
                fail(HTTPLoadError.badServerResponse(url: current.url, reason: "\(error)"))
            } else {
                fail(error)
            }
        }
        context.close(promise: nil)
    }

    private func fail(_ error: any Error) {
        guard let current = pending else { return }
        pending = nil
        current.promise.fail(error)
    }
}

/// The connection closed before any byte of the answer: a reused keep-alive connection the
/// server had just closed, so worth one more try on a new connection.
struct ConnectionClosedBeforeAnswer: Error {
    var url: String
}

/// Sends a body file in 64 KiB pieces on the exchange's event loop, each read once the channel
/// has taken the one before; stops when the exchange ends. Over HTTP/1.1 each piece is a body
/// part, over HTTP/2 a DATA frame.
final class FileBodySender: @unchecked Sendable {
    // @unchecked: used only on the exchange's event loop.
    private let file: PreparedRequest.BodyFile
    private let descriptor: Int32
    private let allocator: ByteBufferAllocator
    private let progress: (@Sendable (Int64, Int64) -> Void)?
    /// Whether the exchange is still in progress on an open channel.
    private let isCurrent: () -> Bool
    private let write: (ByteBuffer) -> EventLoopFuture<Void>
    private let end: () -> Void
    private let fail: (any Error) -> Void

    init(
        file: PreparedRequest.BodyFile, descriptor: Int32, allocator: ByteBufferAllocator, progress: (@Sendable (Int64, Int64) -> Void)?,
        isCurrent: @escaping () -> Bool, write: @escaping (ByteBuffer) -> EventLoopFuture<Void>, end: @escaping () -> Void,
        fail: @escaping (any Error) -> Void
    ) {
        self.file = file
        self.descriptor = descriptor
        self.allocator = allocator
        self.progress = progress
        self.isCurrent = isCurrent
        self.write = write
        self.end = end
        self.fail = fail
    }

    /// Opens `file` and sends it; a file that cannot be opened fails the exchange through `fail`.
    static func open(
        _ file: PreparedRequest.BodyFile, allocator: ByteBufferAllocator, progress: (@Sendable (Int64, Int64) -> Void)?,
        isCurrent: @escaping () -> Bool, write: @escaping (ByteBuffer) -> EventLoopFuture<Void>, end: @escaping () -> Void,
        fail: @escaping (any Error) -> Void
    ) {
        let descriptor = Glibc.open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            fail(HTTPLoadError.invalidConfiguration("cannot open the upload's file \(file.path): \(String(cString: strerror(errno)))"))
            return
        }
        FileBodySender(file: file, descriptor: descriptor, allocator: allocator, progress: progress, isCurrent: isCurrent, write: write, end: end, fail: fail)
            .send(from: 0)
    }

    func send(from offset: Int64) {
        // The exchange may have ended (a timeout, an early answer, a closed connection).
        guard isCurrent() else {
            close(descriptor)
            return
        }
        guard offset < file.length else {
            close(descriptor)
            end()
            return
        }
        let want = Int(min(64 << 10, file.length - offset))
        var chunk = allocator.buffer(capacity: want)
        let got = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { buffer in
            max(0, pread(descriptor, buffer.baseAddress, want, off_t(offset)))
        }
        guard got > 0 else {
            close(descriptor)
            fail(HTTPLoadError.invalidConfiguration("the upload's file \(file.path) could not be read at byte \(offset) of \(file.length) (it shrank, or \(String(cString: strerror(errno))))"))
            return
        }
        let sent = offset + Int64(got)
        write(chunk).whenComplete { result in
            guard case .success = result else {
                close(self.descriptor)
                return
            }
            self.progress?(sent, self.file.length)
            self.send(from: sent)
        }
    }
}
