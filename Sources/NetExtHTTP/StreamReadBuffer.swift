import Foundation
import NIOCore
import NIOSSL
import NIOTLS

/// A stream task's reading end: bytes received wait here until a read takes them; one read at
/// a time, satisfied once `min` bytes are in (or the peer has closed), given at most `max`.
final class StreamReadBuffer: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: every member is touched only on the channel's event loop (`onReadClosed` is
    // set before the handler is added).
    typealias InboundIn = ByteBuffer

    private struct Pending {
        var min: Int
        var max: Int
        var promise: EventLoopPromise<(Data, atEOF: Bool)>
        var timer: Scheduled<Void>
    }

    var onReadClosed: (@Sendable () -> Void)?
    private var received = ByteBuffer()
    private var atEOF = false
    private var pending: Pending?

    /// A read, from any thread; `eventLoop` is the channel's.
    func read(min: Int, max: Int, timeout: TimeAmount, what: String, on eventLoop: any EventLoop) -> EventLoopFuture<(Data, atEOF: Bool)> {
        eventLoop.flatSubmit {
            let promise = eventLoop.makePromise(of: (Data, atEOF: Bool).self)
            guard self.pending == nil else {
                promise.fail(HTTPLoadError.invalidConfiguration("a read of \(what) is already waiting; a stream task reads one at a time"))
                return promise.futureResult
            }
            let seconds = Double(timeout.nanoseconds) / 1e9
            let timer = eventLoop.scheduleTask(in: timeout) {
                guard let pending = self.pending else { return }
                self.pending = nil
                pending.promise.fail(HTTPLoadError.timedOut(url: what, seconds: seconds))
            }
            self.pending = Pending(min: min, max: max, promise: promise, timer: timer)
            self.satisfy()
            return promise.futureResult
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        received.writeBuffer(&bytes)
        satisfy()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { peerClosed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        peerClosed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS close without close_notify is an end of file like any other here.
        if let tls = error as? NIOSSLError, tls == .uncleanShutdown { return }
        if let pending {
            self.pending = nil
            pending.timer.cancel()
            pending.promise.fail(HTTPLoadError.badServerResponse(url: "the stream", reason: TLSErrorText.describe(error)))
        }
        context.close(promise: nil)
    }

    private func peerClosed() {
        guard !atEOF else { return }
        atEOF = true
        onReadClosed?()
        satisfy()
    }

    private func satisfy() {
        guard let current = pending, received.readableBytes >= current.min || atEOF else { return }
        pending = nil
        current.timer.cancel()
        let count = Swift.min(current.max, received.readableBytes)
        let data = Data(received.readBytes(length: count) ?? [])
        received.discardReadBytes()
        current.promise.succeed((data, atEOF: atEOF && received.readableBytes == 0))
    }
}

/// Waits for TLS started on an open stream task, then holds the server's certificate to ATS.
final class StartTLSWaiter: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let done: EventLoopPromise<String?>
    private let host: String
    private let requirements: ATSRequirements

    init(done: EventLoopPromise<String?>, host: String, requirements: ATSRequirements) {
        self.done = done
        self.host = host
        self.requirements = requirements
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            do {
                let operations = context.pipeline.syncOperations
                guard let certificate = try operations.nioSSL_peerCertificate() else {
                    throw HTTPLoadError.tlsFailed(host: host, reason: "the server presented no certificate")
                }
                let facts = try CertificateFacts(der: try certificate.toDERBytes())
                if let refusal = ATSCertificateCheck.refusal(facts, requirements) { throw HTTPLoadError.refused(refusal) }
                let version = try operations.nioSSL_tlsVersion().map(HTTPConnection.name)
                operations.removeHandler(context: context, promise: nil)
                done.succeed(version)
            } catch {
                done.fail(error)
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        done.fail(HandshakeClosed())
        context.fireChannelInactive()
    }
}
