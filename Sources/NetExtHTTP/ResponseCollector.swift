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

/// Sends one request at a time on its channel (an HTTP/1.1 connection, or one HTTP/2 stream)
/// and gathers the answer: interim 1xx heads skipped, the body held up to a limit.
final class ResponseCollector: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // @unchecked: every member is touched only on the channel's event loop.
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private struct Pending {
        var promise: EventLoopPromise<RawResponse>
        var url: String
        var limit: Int
        var head: HTTPResponseHead?
        var body: ByteBuffer
        var sink: BodySink?
        var activity: AnswerActivity?
        /// The body goes to `sink` (a 2xx answer with a sink).
        var streaming = false
    }

    private var context: ChannelHandlerContext?
    private var pending: Pending?
    /// The exchange in progress (a body file's sender checks it is still the one).
    fileprivate var pendingFuture: EventLoopFuture<RawResponse>? { pending?.promise.futureResult }
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
        pending = Pending(promise: promise, url: request.url, limit: limit, body: context.channel.allocator.buffer(capacity: 0), sink: sink, activity: activity)
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
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            fail(HTTPLoadError.invalidConfiguration("cannot open the upload's file \(file.path): \(String(cString: strerror(errno)))"))
            context.close(promise: nil)
            return
        }
        FileBodySender(file: file, descriptor: descriptor, collector: self, context: context, progress: progress).send(from: 0)
    }

    /// Whether `future` is still the exchange in progress (a body file's sender stops otherwise).
    fileprivate func isPending(_ future: EventLoopFuture<RawResponse>?) -> Bool {
        guard let pending, let future else { return false }
        return pending.promise.futureResult === future
    }

    fileprivate func failBody(_ error: any Error, context: ChannelHandlerContext) {
        fail(error)
        context.close(promise: nil)
    }

    fileprivate func bodyPart(_ buffer: ByteBuffer) -> NIOAny { wrapOutboundOut(.body(.byteBuffer(buffer))) }
    fileprivate var bodyEnd: NIOAny { wrapOutboundOut(.end(nil)) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard pending != nil else { return }
        sawAnswerBytes = true
        pending!.activity?.lastRead = .now()
        switch unwrapInboundIn(data) {
        case .head(let head):
            // 1xx answers (100 Continue, 103 Early Hints) come before the real one (RFC 9110 §15.2).
            if head.status.code / 100 == 1 && head.status != .switchingProtocols { return }
            pending?.head = head
            let length = head.headers.first(name: "content-length").flatMap(Int64.init)
            if let sink = pending!.sink, head.status.code / 100 == 2 {
                pending!.streaming = true
                if head.status == .ok && sink.received > 0 {
                    do { try sink.restart() } catch {
                        fail(error)
                        context.close(promise: nil)
                        return
                    }
                    sink.received = 0
                }
                sink.expected = length.map { sink.received + $0 }
                // A whole answer (200) names its own validator; a 206 goes on under the old one.
                if head.status == .ok { sink.validator = nil }
                sink.validator = sink.validator ?? head.headers.first(name: "etag") ?? head.headers.first(name: "last-modified")
                sink.onHead?()
                return
            }
            // The body's room made once when its length is known (up to the limit).
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > 0, length <= pending!.limit {
                pending!.body.reserveCapacity(Int(length))
            }
        case .body(var part):
            if pending!.streaming, let sink = pending!.sink {
                do { try sink.write(part) } catch {
                    fail(error)
                    context.close(promise: nil)
                    return
                }
                sink.received += Int64(part.readableBytes)
                sink.progress?(sink.received, sink.expected)
                return
            }
            // Appended in place: a copy of `pending` would share the body's storage and copy it
            // on every append.
            guard pending!.body.readableBytes + part.readableBytes <= pending!.limit else {
                fail(HTTPLoadError.responseTooLarge(url: pending!.url, limit: pending!.limit))
                context.close(promise: nil)
                return
            }
            pending!.body.writeBuffer(&part)
        case .end:
            let current = pending!
            pending = nil
            guard let head = current.head else {
                current.promise.fail(HTTPLoadError.badServerResponse(url: current.url, reason: "the answer ended before its head"))
                return
            }
            current.promise.succeed(RawResponse(head: head, body: current.body))
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
/// has taken the one before; stops when the exchange ends.
private final class FileBodySender: @unchecked Sendable {
    // @unchecked: used only on the exchange's event loop.
    private let file: PreparedRequest.BodyFile
    private let descriptor: Int32
    private let collector: ResponseCollector
    private let context: ChannelHandlerContext
    private let progress: (@Sendable (Int64, Int64) -> Void)?
    private let exchange: EventLoopFuture<RawResponse>?

    init(file: PreparedRequest.BodyFile, descriptor: Int32, collector: ResponseCollector, context: ChannelHandlerContext, progress: (@Sendable (Int64, Int64) -> Void)?) {
        self.file = file
        self.descriptor = descriptor
        self.collector = collector
        self.context = context
        self.progress = progress
        exchange = collector.pendingFuture
    }

    func send(from offset: Int64) {
        // The exchange may have ended (a timeout, an early answer, a closed connection).
        guard context.channel.isActive, collector.isPending(exchange) else {
            close(descriptor)
            return
        }
        guard offset < file.length else {
            close(descriptor)
            context.writeAndFlush(collector.bodyEnd, promise: nil)
            return
        }
        let want = Int(min(64 << 10, file.length - offset))
        var chunk = context.channel.allocator.buffer(capacity: want)
        let got = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { buffer in
            max(0, pread(descriptor, buffer.baseAddress, want, off_t(offset)))
        }
        guard got > 0 else {
            close(descriptor)
            collector.failBody(
                HTTPLoadError.invalidConfiguration("the upload's file \(file.path) could not be read at byte \(offset) of \(file.length) (it shrank, or \(String(cString: strerror(errno))))"),
                context: context)
            return
        }
        let sent = offset + Int64(got)
        context.writeAndFlush(collector.bodyPart(chunk)).whenComplete { result in
            guard case .success = result else {
                close(self.descriptor)
                return
            }
            self.progress?(sent, self.file.length)
            self.send(from: sent)
        }
    }
}
