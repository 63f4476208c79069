import NIOCore
import NIOHTTP2

/// A client stream's wait for the relay's answer to its request: the first HEADERS frame
/// settles `promise` — 2xx accepts, anything else fails it with the status and Proxy-Status
/// (``RelayClient/refusal(in:of:)``), and the stream is to be closed — and a stream that ends
/// first fails it. `what` names the request in sentences ("the flow to host:443").
struct RelayAnswer {
    let promise: EventLoopPromise<Void>
    let what: String
    private(set) var isSettled = false

    init(promise: EventLoopPromise<Void>, what: String) {
        self.promise = promise
        self.what = what
    }

    /// What `take` made of a frame.
    enum Taken {
        /// Answered already: the frame is the caller's.
        case notTaken
        /// The answer (accepted) or a frame before it (dropped).
        case taken
        /// The answer refused the request: the caller closes the stream (not here: closing
        /// re-enters the handler, which must not happen while this value is being changed).
        case refused
    }

    /// Takes `frame` while the answer is awaited, settling the promise with the first HEADERS.
    mutating func take(_ frame: HTTP2Frame.FramePayload) -> Taken {
        guard !isSettled else { return .notTaken }
        guard case .headers(let headers) = frame else { return .taken }
        isSettled = true
        if let refusal = RelayClient.refusal(in: headers.headers, of: what) {
            promise.fail(refusal)
            return .refused
        }
        promise.succeed(())
        return .taken
    }

    /// The stream ended: an answer still awaited fails.
    mutating func streamEnded() {
        guard !isSettled else { return }
        isSettled = true
        promise.fail(RelayClient.Failure(description: "the relay closed the stream for \(what) before answering", status: nil))
    }
}
