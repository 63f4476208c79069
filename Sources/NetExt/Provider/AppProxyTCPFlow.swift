import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// How a relayed flow ended: the bytes the app sent and received, and what ended it, if it
/// failed (a connection refused, a reset).
public struct FlowRelayResult: Sendable, Hashable {
    public var sent: Int
    public var received: Int
    public var error: NetExtError?

    public init(sent: Int, received: Int, error: NetExtError?) {
        self.sent = sent
        self.received = received
        self.error = error
    }

    init(_ outcome: FlowRelay.Outcome, endpoint: NetworkEndpoint) {
        self.init(sent: outcome.appToUpstream, received: outcome.upstreamToApp, error: outcome.error.map { NetExtError(.connectionFailed, "the flow to \(endpoint): \($0)") })
    }
}

/// Who a flow comes from, as Apple's `NEFlowMetaData`.
public struct FlowMetaData: Sendable, Hashable {
    /// The app identifier the app was bound with (`sourceAppSigningIdentifier`).
    public var sourceAppSigningIdentifier: String
    /// The process that owns the app's socket, when netextd found it.
    public var processIdentifier: Int32?
    /// That process's executable.
    public var executablePath: String?

    init(_ offer: AppProxyFlowOffer) {
        sourceAppSigningIdentifier = offer.sourceAppIdentifier
        processIdentifier = offer.processIdentifier
        executablePath = offer.executablePath
    }
}

/// One TCP connection of an app, as Apple's `NEAppProxyTCPFlow`, backed by the real socket the
/// kernel accepted for it: reads return what the app sent, writes reach the app. Where Apple's
/// flow is opened before data moves, this one is already connected (`open` only checks that it
/// is still usable); its bytes can be moved inside the kernel (``relay(with:completion:)``,
/// ``relay(connectingTo:completion:)``).
/// The socket is closed when both directions are.
public final class AppProxyTCPFlow: AppProxyFlow, @unchecked Sendable {
    private let state = Mutex((readClosed: false, writeClosed: false, descriptorClosed: false))

    deinit {
        if !state.withLock({ $0.descriptorClosed }) { SocketPair.close(fileDescriptor) }
        if !relayed.withLock({ $0 }) { endNotice.end() }
    }

    /// Whether the relay has the socket: it ends the flow when it closes it.
    private let relayed = Mutex(false)

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
            FlowIO.run {
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
            FlowIO.run {
                let sent = data.withUnsafeBytes { StreamIO.sendAll(fd, $0) }
                continuation.resume(returning: sent.mapError { NetExtError(.connectionFailed, "writing the flow to \(endpoint): \($0)") })
            }
        }
        try result.get()
    }

    /// Moves the flow's bytes to and from `upstream` (a connected socket, the relay's from now
    /// on) inside the kernel until both directions have ended, then closes both; `completion`
    /// (on the relay's thread; keep it short) learns the bytes each way. No thread per flow: one
    /// loop relays every flow of the process. The fast path of the reference proxies.
    public func relay(with upstream: Int32, completion: (@Sendable (FlowRelayResult) -> Void)? = nil) {
        guard let app = takeDescriptor() else {
            SocketPair.close(upstream)
            completion?(FlowRelayResult(sent: 0, received: 0, error: NetExtError(.connectionFailed, "the flow to \(remoteEndpoint) was already closed")))
            return
        }
        let endpoint = remoteEndpoint
        do throws(SystemError) {
            guard let relay = FlowRelay.shared else { throw SystemError("flow relay", errno: ENOMEM) }
            relayed.withLock { $0 = true }
            let notice = endNotice
            try relay.relay(app: app, upstream: upstream) { outcome in
                notice.end()
                completion?(FlowRelayResult(outcome, endpoint: endpoint))
            }
        } catch {
            relayed.withLock { $0 = false }
            StreamIO.reset(app)
            endNotice.end()
            SocketPair.close(upstream)
            completion?(FlowRelayResult(sent: 0, received: 0, error: NetExtError(.connectionFailed, "relaying the flow to \(endpoint): \(error)")))
        }
    }

    /// Connects to `destination` (an address and port) without blocking any thread and relays
    /// the flow to it, as ``relay(with:completion:)``; a connection that fails resets the app's.
    public func relay(connectingTo destination: NetworkEndpoint, completion: (@Sendable (FlowRelayResult) -> Void)? = nil) {
        guard let address = SocketAddress(destination.hostname.contains(":") ? "[\(destination.hostname)]:\(destination.port)" : "\(destination.hostname):\(destination.port)") else {
            reset()
            completion?(FlowRelayResult(sent: 0, received: 0, error: NetExtError(.configurationInvalid, "\(destination) is not an address and port")))
            return
        }
        guard let app = takeDescriptor() else {
            completion?(FlowRelayResult(sent: 0, received: 0, error: NetExtError(.connectionFailed, "the flow to \(remoteEndpoint) was already closed")))
            return
        }
        do throws(SystemError) {
            guard let relay = FlowRelay.shared else { throw SystemError("flow relay", errno: ENOMEM) }
            relayed.withLock { $0 = true }
            let notice = endNotice
            try relay.relay(app: app, connectingTo: address) { outcome in
                notice.end()
                completion?(FlowRelayResult(outcome, endpoint: destination))
            }
        } catch {
            relayed.withLock { $0 = false }
            StreamIO.reset(app)
            endNotice.end()
            completion?(FlowRelayResult(sent: 0, received: 0, error: NetExtError(.connectionFailed, "relaying the flow to \(destination): \(error)")))
        }
    }

    /// ``relay(with:completion:)``, awaited.
    public func relay(with upstream: Int32) async -> FlowRelayResult {
        await withCheckedContinuation { continuation in relay(with: upstream) { continuation.resume(returning: $0) } }
    }

    /// Hands the flow's connected socket to a provider that carries its bytes itself (a relay
    /// client, say): the flow no longer reads, writes or closes it, and the caller calls
    /// `ended` once it has closed the socket (netextd then counts the flow as over). The socket
    /// is set to reset when closed, as netextd hands it over, so that a provider that dies
    /// resets its apps' connections; clear `SO_LINGER` before an orderly close. Nil if the flow
    /// was closed already.
    public func takeSocket() -> (socket: Int32, ended: @Sendable () -> Void)? {
        guard let fd = takeDescriptor() else { return nil }
        relayed.withLock { $0 = true }
        let notice = endNotice
        return (fd, { notice.end() })
    }

    /// Hands the descriptor over (to the relay, or back to netextd): the flow no longer closes it.
    func takeDescriptor() -> Int32? {
        let taken = state.withLock { current -> Bool in
            defer { current = (true, true, true) }
            return !current.descriptorClosed
        }
        return taken ? fileDescriptor : nil
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
        if first {
            StreamIO.reset(fileDescriptor)
            endNotice.end()
        }
    }

    private func closeDescriptor() {
        let first = state.withLock { current -> Bool in
            defer { current = (true, true, true) }
            return !current.descriptorClosed
        }
        if first {
            // netextd hands sockets over set to reset when closed (a provider that dies resets its
            // apps' connections); an orderly close is asked for here.
            StreamIO.setResetOnClose(fileDescriptor, false)
            StreamIO.shutdown(fileDescriptor, read: true, write: true)
            SocketPair.close(fileDescriptor)
            endNotice.end()
        }
    }
}
