import NIOCore
import NIOHTTP1

/// One exchange's answer as its parts arrive, the same over HTTP/1.1 (``ResponseCollector``) and
/// HTTP/2 (``HTTP2Exchanges``): interim 1xx heads skipped (RFC 9110 §15.2), a 2xx body streamed to
/// the exchange's sink when it has one, any other body held up to a limit.
struct AnswerAssembly {
    let promise: EventLoopPromise<RawResponse>
    /// The URL, for messages.
    let url: String
    private let limit: Int
    private var head: HTTPResponseHead?
    private var body = ByteBuffer()
    private let sink: BodySink?
    private let activity: AnswerActivity?
    /// The body goes to `sink` (a 2xx answer with a sink).
    private var streaming = false

    init(promise: EventLoopPromise<RawResponse>, url: String, limit: Int, sink: BodySink?, activity: AnswerActivity?) {
        self.promise = promise
        self.url = url
        self.limit = limit
        self.sink = sink
        self.activity = activity
    }

    /// Whether the real (non-1xx) head has come.
    var hasHead: Bool { head != nil }

    /// Takes a head; returns the error the exchange fails with (its connection or stream is then
    /// closed), else nil.
    mutating func received(_ head: HTTPResponseHead) -> (any Error)? {
        activity?.lastRead = .now()
        // 1xx answers (100 Continue, 103 Early Hints) come before the real one (RFC 9110 §15.2).
        if head.status.code / 100 == 1 && head.status != .switchingProtocols { return nil }
        self.head = head
        let length = head.headers.first(name: "content-length").flatMap(Int64.init)
        if let sink, head.status.code / 100 == 2 {
            streaming = true
            if head.status == .ok && sink.received > 0 {
                do { try sink.restart() } catch { return error }
                sink.received = 0
            }
            sink.expected = length.map { sink.received + $0 }
            // A whole answer (200) names its own validator; a 206 goes on under the old one.
            if head.status == .ok { sink.validator = nil }
            sink.validator = sink.validator ?? head.headers.first(name: "etag") ?? head.headers.first(name: "last-modified")
            sink.onHead?()
            return nil
        }
        // The body's room made once when its length is known (up to the limit).
        if let length, length > 0, length <= limit { body.reserveCapacity(Int(length)) }
        return nil
    }

    /// Takes a part of the body; returns the error the exchange fails with, else nil.
    mutating func received(_ part: inout ByteBuffer) -> (any Error)? {
        activity?.lastRead = .now()
        if streaming, let sink {
            do { try sink.write(part) } catch { return error }
            sink.received += Int64(part.readableBytes)
            sink.progress?(sink.received, sink.expected)
            return nil
        }
        guard body.readableBytes + part.readableBytes <= limit else { return HTTPLoadError.responseTooLarge(url: url, limit: limit) }
        // Appended in place (the assembly is held where it is mutated, not copied per part).
        body.writeBuffer(&part)
        return nil
    }

    /// The answer has ended: the exchange succeeds with it, or fails if no head came.
    func finish() {
        guard let head else {
            promise.fail(HTTPLoadError.badServerResponse(url: url, reason: "the answer ended before its head"))
            return
        }
        promise.succeed(RawResponse(head: head, body: body))
    }
}
