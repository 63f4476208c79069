import NetExtCore
import Synchronization

/// What every flow handed to an app proxy has, as Apple's `NEAppProxyFlow` (the parent of its TCP
/// and UDP flows): where it goes, where it comes from, who sent it, and its socket.
public class AppProxyFlow: @unchecked Sendable {
    /// Where the app was sending the flow.
    public let remoteEndpoint: NetworkEndpoint
    /// The app's own end.
    public let localEndpoint: NetworkEndpoint
    /// The name the app asked its resolver for, when netextd saw the answer.
    public let remoteHostname: String?
    public let metaData: FlowMetaData
    /// netextd's number for the flow.
    public let identifier: UInt64
    /// `.outbound` (a program here opened it) or `.inbound` (another machine opened it to a
    /// service here: `remoteEndpoint` is that machine, `localEndpoint` the service).
    public let direction: TrafficDirection
    /// The flow's socket (blocking), owned by the flow.
    public let fileDescriptor: Int32
    /// Tells netextd when the flow, once taken, is over (its live-flow count and limit).
    let endNotice = FlowEndNotice()

    init(offer: AppProxyFlowOffer, descriptor: Int32) {
        remoteEndpoint = offer.remoteEndpoint
        localEndpoint = offer.localEndpoint
        remoteHostname = offer.remoteHostname
        identifier = offer.id
        direction = offer.direction
        metaData = FlowMetaData(offer)
        fileDescriptor = descriptor
    }
}

/// Tells netextd, once, that a flow the provider took has ended (``AppProxyFlowCodec`` `ended`),
/// and never before the flow's answer went: a flow can end inside `handleNewFlow` already.
final class FlowEndNotice: Sendable {
    private let state = Mutex<(send: (@Sendable () -> Void)?, ended: Bool, sent: Bool)>((nil, false, false))

    /// The answer went (the flow was taken): `send` tells netextd, now if the flow ended already.
    func arm(_ send: @escaping @Sendable () -> Void) {
        let now = state.withLock { current -> Bool in
            guard !current.sent else { return false }
            if current.ended {
                current.sent = true
                return true
            }
            current.send = send
            return false
        }
        if now { send() }
    }

    /// The flow's socket is closed (or handed to the relay, which closed it).
    func end() {
        let send = state.withLock { current -> (@Sendable () -> Void)? in
            guard !current.ended else { return nil }
            current.ended = true
            guard let send = current.send, !current.sent else { return nil }
            current.sent = true
            return send
        }
        send?()
    }
}
