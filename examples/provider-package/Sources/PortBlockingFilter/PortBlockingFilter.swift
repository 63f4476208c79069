import NetExt
import Foundation
import NetExtFilters
import Synchronization

/// A content filter data provider built on the reference school filter: it drops every flow to
/// a port listed in `vendorConfiguration["blockedPorts"]` (`[25, 6881]` or `"25,6881"`) and asks
/// the school filter about every other flow, so the school filter's host, address and URL rules
/// keep working. When the configuration also sets the school filter's `filterPorts`, list the
/// blocked ports there too: flows to other ports are let through by the kernel and never reach
/// this provider.
///
/// This is composition, not subclassing: the reference providers are `final` classes. Forward
/// the calls you do not change to the wrapped provider.
public final class PortBlockingFilter: FilterDataProvider {
    private let school = SchoolFilterProvider()
    private let blockedPorts = Mutex<Set<UInt16>>([])

    public init() {}

    public func startFilter(context: FilterContext) async throws {
        let ports = try Self.ports(context.vendorConfiguration["blockedPorts"])
        blockedPorts.withLock { $0 = ports }
        try await school.startFilter(context: context)
    }

    /// `[25, 6881]` from a profile or the library, or `"25,6881"` from
    /// `netext filter create --config blockedPorts=25,6881`; absent: none.
    public static func ports(_ value: JSONValue?) throws(NetExtError) -> Set<UInt16> {
        let items: [String]
        switch value {
        case nil: return []
        case .array(let values)?: items = values.map { $0.numberValue.map { String(Int($0)) } ?? $0.stringValue ?? "?" }
        case .string(let text)?: items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        default: throw NetExtError.invalid("vendorConfiguration.blockedPorts must be a list of ports or a string like \"25,6881\"")
        }
        var ports = Set<UInt16>()
        for (index, item) in items.enumerated() {
            guard let port = UInt16(item), port > 0 else {
                throw NetExtError.invalid("vendorConfiguration.blockedPorts[\(index)] '\(item)' is not a port number (1-65535)")
            }
            ports.insert(port)
        }
        return ports
    }

    public func stopFilter(reason: ProviderStopReason) async {
        await school.stopFilter(reason: reason)
    }

    public func handleNewFlow(_ flow: FilterFlow) -> FilterNewFlowVerdict {
        if flow.direction == .outbound, blockedPorts.withLock({ $0.contains(flow.remotePort) }) { return .drop }
        return school.handleNewFlow(flow)
    }

    public func handleInboundData(from flow: FilterFlow, readBytesStartOffset offset: Int, readBytes: [UInt8]) -> FilterDataVerdict {
        school.handleInboundData(from: flow, readBytesStartOffset: offset, readBytes: readBytes)
    }

    public func handleInboundDataComplete(for flow: FilterFlow) -> FilterDataVerdict {
        school.handleInboundDataComplete(for: flow)
    }

    public func handleRulesChanged() async {
        await school.handleRulesChanged()
    }
}
