import NetExtCore

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
    /// The flow's socket (blocking), owned by the flow.
    public let fileDescriptor: Int32

    init(offer: AppProxyFlowOffer, descriptor: Int32) {
        remoteEndpoint = offer.remoteEndpoint
        localEndpoint = offer.localEndpoint
        remoteHostname = offer.remoteHostname
        identifier = offer.id
        metaData = FlowMetaData(offer)
        fileDescriptor = descriptor
    }
}
