/// A data provider's answer for a new flow (Apple's `NEFilterNewFlowVerdict`).
public enum FilterNewFlowVerdict: Sendable, Hashable {
    /// Let the flow pass; the rest of it stays in the kernel.
    case allow
    /// Drop the flow (TCP: reset; a cleartext HTTP request gets the block page when the
    /// configuration names an organization or a request-access link).
    case drop
    /// The data provider cannot decide without fresh rules: the flow waits while the control
    /// provider is asked, then it is asked again.
    case needRules
    /// Look at the flow's data before deciding (Apple's `filterDataVerdict(withFilterInbound:
    /// peekInboundBytes:filterOutbound:peekOutboundBytes:)`): up to `peekOutboundBytes` of what
    /// the program sends and `peekInboundBytes` of what it receives are shown to
    /// `handleOutboundData` / `handleInboundData`, and nothing unpassed reaches the other end.
    /// nil leaves a direction unfiltered; windows are cut to `FlowDataFilter.maximumPeek`.
    case filterData(peekInboundBytes: Int?, peekOutboundBytes: Int?)

    /// The same decision as a plain verdict.
    public init(_ verdict: FilterVerdict) {
        switch verdict {
        case .allow: self = .allow
        case .drop: self = .drop
        case .needRules: self = .needRules
        }
    }
}

/// A data provider's answer after seeing some of a flow's data (Apple's `NEFilterDataVerdict`).
public enum FilterDataVerdict: Sendable, Hashable {
    /// Let the rest of the flow pass (both directions); it goes to the kernel.
    case allow
    /// Drop the flow (TCP: reset).
    case drop
    /// Pass `passBytes` from the offset of the bytes just shown (`FlowDataFilter.passAll`: the
    /// rest of this direction), and show up to `peekBytes` after them in the next call.
    case data(passBytes: Int, peekBytes: Int)
    /// Block the flow and, if it is a cleartext HTTP request whose answer has not begun, answer
    /// it with the block page, with the provider's request-access link when it gives one (else
    /// the configuration's). Other flows are dropped.
    case remediate(FilterRemediation)
}

/// The request-access link a remediation verdict puts on the block page (Apple's
/// `remediationURL` / `remediationButtonText`).
public struct FilterRemediation: Sendable, Hashable {
    public var requestAccessText: String?
    public var requestAccessURL: String?

    public init(requestAccessText: String? = nil, requestAccessURL: String? = nil) {
        self.requestAccessText = requestAccessText
        self.requestAccessURL = requestAccessURL
    }
}
