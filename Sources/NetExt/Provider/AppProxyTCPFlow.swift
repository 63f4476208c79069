import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// Who a flow comes from, as Apple's `NEFlowMetaData`.
public struct FlowMetaData: Sendable, Hashable {
    /// The app identifier the app was bound with (`sourceAppSigningIdentifier`).
    public var sourceAppSigningIdentifier: String
    /// The process that owns the app's socket, when netextd found it.
    public var processIdentifier: Int32?
    /// That process's executable.
    public var executablePath: String?
}

/// One TCP connection of an app, as Apple's `NEAppProxyTCPFlow`, backed by the real socket the
/// kernel accepted for it: reads return what the app sent, writes reach the app. Where Apple's
/// flow is opened before data moves, this one is already connected (`open` only checks that it
/// is still usable); the descriptor itself is available to move bytes in the kernel
/// (``relay(with:)``).
public final class AppProxyTCPFlow: Sendable {
    /// Where the app was connecting to.
    public let remoteEndpoint: NetworkEndpoint
    /// The app's own end.
    public let localEndpoint: NetworkEndpoint
    /// The name the app asked its resolver for, when netextd saw the answer.
    public let remoteHostname: String?
    public let metaData: FlowMetaData
    /// netextd's number for the flow.
    public let identifier: UInt64
    /// The connected socket (blocking). Owned by the flow: closed when both directions are.
    public let fileDescriptor: Int32
    private let state = Mutex((readClosed: false, writeClosed: false, descriptorClosed: false))

    init(offer: AppProxyFlowOffer, descriptor: Int32) {
        remoteEndpoint = offer.remoteEndpoint
        localEndpoint = offer.localEndpoint
        remoteHostname = offer.remoteHostname
        identifier = offer.id
        metaData = FlowMetaData(sourceAppSigningIdentifier: offer.sourceAppIdentifier, processIdentifier: offer.processIdentifier, executablePath: offer.executablePath)
        fileDescriptor = descriptor
    }

    deinit {
        if !state.withLock({ $0.descriptorClosed }) { SocketPair.close(fileDescriptor) }
    }

    /// Apple's `open(withLocalEndpoint:)`: the kernel already completed the app's handshake, so
    /// this only throws if the flow was closed meanwhile.
    public func open() throws(NetExtError) {
        if state.withLock({ $0.descriptorClosed }) { throw NetExtError(.connectionFailed, "the flow to \(remoteEndpoint) is closed") }
    }

    /// The next bytes the app sent (at most `maximumLength`); empty once the app finished
    /// sending. Blocks a thread of its own, never the caller's.
    public func readData(maximumLength: Int = 65_536) async throws(NetExtError) -> Data {
        let fd = fileDescriptor, endpoint = remoteEndpoint
        let result: Result<Data, NetExtError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var buffer = Data(count: maximumLength)
                let count = buffer.withUnsafeMutableBytes { StreamIO.receive(fd, into: $0) }
                switch count {
                case .success(let read):
                    buffer.count = read
                    continuation.resume(returning: .success(buffer))
                case .failure(let error):
                    continuation.resume(returning: .failure(NetExtError(.connectionFailed, "reading the flow to \(endpoint): \(error)")))
                }
            }
        }
        return try result.get()
    }

    /// Writes everything to the app (blocks a thread of its own until it is sent).
    public func write(_ data: Data) async throws(NetExtError) {
        let fd = fileDescriptor, endpoint = remoteEndpoint
        let result: Result<Void, NetExtError> = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let sent = data.withUnsafeBytes { StreamIO.sendAll(fd, $0) }
                continuation.resume(returning: sent.mapError { NetExtError(.connectionFailed, "writing the flow to \(endpoint): \($0)") })
            }
        }
        try result.get()
    }

    /// Moves the flow's bytes to and from `upstream` (a connected blocking socket) inside the
    /// kernel until both directions have ended, then closes the flow (not `upstream`). Returns
    /// the bytes the app sent and the bytes it received. The fast path of the reference proxies.
    public func relay(with upstream: Int32) async -> (sent: Int, received: Int) {
        let app = fileDescriptor
        async let sent = Self.pump(from: app, to: upstream)
        async let received = Self.pump(from: upstream, to: app)
        let result = await (sent, received)
        closeDescriptor()
        return result
    }

    private static func pump(from: Int32, to: Int32) async -> Int {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                let moved = (try? StreamSplice.pump(from: from, to: to).get()) ?? 0
                continuation.resume(returning: moved)
            }
            thread.name = "netext-flow-relay"
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    /// Stops reading from the app (Apple's `closeReadWithError`); the socket is closed once
    /// writing is closed too.
    public func closeReadWithError(_ error: (any Error)?) {
        StreamIO.shutdown(fileDescriptor, read: true, write: false)
        if state.withLock({ $0.readClosed = true; return $0.writeClosed }) { closeDescriptor() }
    }

    /// Ends what goes to the app (Apple's `closeWriteWithError`): with no error the app reads
    /// the end of the stream; with an error the connection is reset.
    public func closeWriteWithError(_ error: (any Error)?) {
        if error != nil {
            reset()
            return
        }
        StreamIO.shutdown(fileDescriptor, read: false, write: true)
        if state.withLock({ $0.writeClosed = true; return $0.readClosed }) { closeDescriptor() }
    }

    /// Resets the connection (the app's next call fails) and closes it.
    public func reset() {
        let first = state.withLock { current -> Bool in
            defer { current = (true, true, true) }
            return !current.descriptorClosed
        }
        if first { StreamIO.reset(fileDescriptor) }
    }

    private func closeDescriptor() {
        let first = state.withLock { current -> Bool in
            defer { current = (true, true, true) }
            return !current.descriptorClosed
        }
        if first {
            StreamIO.shutdown(fileDescriptor, read: true, write: true)
            SocketPair.close(fileDescriptor)
        }
    }
}
