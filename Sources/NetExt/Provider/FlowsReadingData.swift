import NetExtCore
import NetExtIPC

/// The data provider's side of the flow channel: calls the provider for each message and
/// remembers the flows whose data it reads (answered `.filterData`) until it gives them a final
/// verdict. Used on the flow channel's thread only.
struct FlowsReadingData {
    private var flows: [UInt64: FilterFlow] = [:]
    /// Flows remembered at most; the oldest are forgotten first (netextd decides flows it stops
    /// asking about by its failure policy).
    static let limit = 16_384

    mutating func answer(_ message: FlowChannelCodec.ToProvider, provider: any FilterDataProvider) -> FlowChannelCodec.FromProvider? {
        switch message {
        case .flow(let flow):
            let verdict = provider.handleNewFlow(flow)
            if case .filterData = verdict { remember(flow) }
            return .verdict(flowID: flow.id, verdict)
        case .data(let flowID, let side, let offset, let bytes):
            guard let flow = flows[flowID] else { return .dataVerdict(flowID: flowID, side: side, .allow) }
            let verdict = side == .outbound
                ? provider.handleOutboundData(from: flow, readBytesStartOffset: offset, readBytes: bytes)
                : provider.handleInboundData(from: flow, readBytesStartOffset: offset, readBytes: bytes)
            settle(flowID, verdict)
            return .dataVerdict(flowID: flowID, side: side, verdict)
        case .complete(let flowID, let side):
            guard let flow = flows[flowID] else { return .dataVerdict(flowID: flowID, side: side, .allow) }
            let verdict = side == .outbound ? provider.handleOutboundDataComplete(for: flow) : provider.handleInboundDataComplete(for: flow)
            settle(flowID, verdict)
            return .dataVerdict(flowID: flowID, side: side, verdict)
        }
    }

    private mutating func remember(_ flow: FilterFlow) {
        if flows.count >= Self.limit, let oldest = flows.keys.min() { flows[oldest] = nil }
        flows[flow.id] = flow
    }

    private mutating func settle(_ flowID: UInt64, _ verdict: FilterDataVerdict) {
        if case .data = verdict { return }
        flows[flowID] = nil
    }
}
