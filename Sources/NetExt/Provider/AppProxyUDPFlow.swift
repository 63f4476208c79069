import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// One datagram of a UDP flow and the endpoint it came from or goes to.
public struct FlowDatagram: Sendable, Hashable {
    public var data: Data
    public var endpoint: NetworkEndpoint
    public init(data: Data, endpoint: NetworkEndpoint) {
        self.data = data
        self.endpoint = endpoint
    }
}

/// The datagrams an app sends from one socket to one destination, as Apple's
/// `NEAppProxyUDPFlow`, backed by a real socket of the flow's own: reads return what the app
/// sent to ``AppProxyFlow/remoteEndpoint`` (the first datagram included), writes reach the app as if
/// ``AppProxyFlow/remoteEndpoint`` had sent them. Where Apple's UDP flow covers every destination of the
/// app's socket, NetExt hands one flow per destination.
/// Its socket is connected to the app.
public final class AppProxyUDPFlow: AppProxyFlow, @unchecked Sendable {
    private let state: Mutex<(initial: [UInt8]?, closed: Bool)>

    override init(offer: AppProxyFlowOffer, descriptor: Int32) {
        state = Mutex((offer.initialDatagram, false))
        super.init(offer: offer, descriptor: descriptor)
    }

    deinit { close() }

    /// Apple's `open(withLocalEndpoint:)`: the flow is usable as it is; throws once closed.
    public func open() throws(NetExtError) {
        if state.withLock({ $0.closed }) { throw NetExtError(.connectionFailed, "the UDP flow to \(remoteEndpoint) is closed") }
    }

    /// The app's next datagrams (the first one netextd received included), waiting at most
    /// `timeout`; empty when none came in that time. Throws once the flow is closed.
    public func readDatagrams(timeout: Duration = .seconds(60)) async throws(NetExtError) -> [FlowDatagram] {
        if let first = takeFirstDatagram() { return [first] }
        let fd = fileDescriptor, endpoint = remoteEndpoint
        let milliseconds = Int32(clamping: timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let result: Result<[FlowDatagram], NetExtError> = await withCheckedContinuation { continuation in
            FlowIO.run {
                guard DescriptorWait.readable([fd], milliseconds: milliseconds)[0] else {
                    continuation.resume(returning: .success([]))
                    return
                }
                var buffer = Data(count: 65_536)
                let received = buffer.withUnsafeMutableBytes { DatagramIO.receive(fd, into: $0) }
                switch received {
                case .success(let count):
                    buffer.count = count
                    continuation.resume(returning: .success([FlowDatagram(data: buffer, endpoint: endpoint)]))
                case .failure(let error):
                    continuation.resume(returning: .failure(NetExtError(.connectionFailed, "reading the UDP flow to \(endpoint): \(error)")))
                }
            }
        }
        return try result.get()
    }

    /// The datagram netextd received before the flow had a socket of its own, once: a provider
    /// that reads ``AppProxyFlow/fileDescriptor`` itself takes it here first (``readDatagrams(timeout:)``
    /// returns it first otherwise).
    public func takeFirstDatagram() -> FlowDatagram? {
        let first = state.withLock { current -> [UInt8]? in
            defer { current.initial = nil }
            return current.initial
        }
        return first.map { FlowDatagram(data: Data($0), endpoint: remoteEndpoint) }
    }

    /// Sends datagrams to the app, each as if from its `endpoint`, which must be the flow's
    /// ``AppProxyFlow/remoteEndpoint`` (the only one its socket can send as).
    public func writeDatagrams(_ datagrams: [FlowDatagram]) throws(NetExtError) {
        for datagram in datagrams {
            guard datagram.endpoint == remoteEndpoint else {
                throw NetExtError(.configurationInvalid, "a UDP flow to \(remoteEndpoint) can send only as \(remoteEndpoint), not \(datagram.endpoint)")
            }
            let sent = datagram.data.withUnsafeBytes { DatagramIO.send(fileDescriptor, $0) }
            if case .failure(let error) = sent { throw NetExtError(.connectionFailed, "writing the UDP flow to \(remoteEndpoint): \(error)") }
        }
    }

    /// Closes the flow (Apple's `closeReadWithError` and `closeWriteWithError` together: a UDP
    /// flow has no half-close); the app's later datagrams to the destination start a new flow.
    public func close() {
        if let fd = takeDescriptor() {
            SocketPair.close(fd)
            endNotice.end()
        }
    }

    /// Hands the descriptor back to netextd (a transparent proxy's declined flow): the flow no
    /// longer closes it. Nil if it was closed already.
    func takeDescriptor() -> Int32? {
        let first = state.withLock { current -> Bool in
            defer { current.closed = true }
            return !current.closed
        }
        return first ? fileDescriptor : nil
    }
}
