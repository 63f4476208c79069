/// A scan list annotated by the helpers' answers to `filterScanList`, as `netext hotspot list`
/// shows it: each network of the scan with the helper that claims it at the highest confidence
/// (equal confidences: the helper listed first), or none.
public struct HotspotScanList: Sendable, Hashable, Codable {
    public struct Entry: Sendable, Hashable, Codable {
        /// The network as the scan reported it, with the winning claim's confidence and password.
        public var network: HotspotNetwork
        /// The helper that claims it, if any.
        public var helper: String?
    }

    public var entries: [Entry]
    /// Claims ignored: for networks the scan did not list (a helper cannot add networks).
    public var ignoredClaims: Int

    /// `answers`: each helper's answer, in the helpers' registration order; answers other than
    /// `success` claim nothing.
    public init(scan: [HotspotNetwork], answers: [(helper: String, response: HotspotHelperResponse)]) {
        var entries = scan.map { network in
            var plain = network
            plain.confidence = .none
            plain.password = nil
            return Entry(network: plain, helper: nil)
        }
        var ignored = 0
        for (helper, response) in answers where response.result == .success {
            for claim in response.networkList where claim.confidence > .none {
                guard let index = entries.firstIndex(where: { $0.network.isSameNetwork(as: claim) }) else {
                    ignored += 1
                    continue
                }
                if claim.confidence > entries[index].network.confidence {
                    entries[index] = Entry(network: entries[index].network.annotated(by: claim), helper: helper)
                }
            }
        }
        self.entries = entries
        ignoredClaims = ignored
    }
}
