import ExamplePortBlockingFilter
import Foundation
import NetExt
import NetExtFilters
import Testing

/// The example package's filter (examples/provider-package), compiled here as
/// `ExamplePortBlockingFilter` so that CI keeps it building and right: ports it blocks are
/// dropped, and every other flow gets exactly the school filter's answer.
@Suite("Example provider package: the port-blocking filter built on the school filter")
struct PortBlockingFilterTests {
    static func context(_ vendor: [String: JSONValue]) -> FilterContext {
        FilterContext(
            configuration: Configuration(
                owner: Owner(uid: 0, appIdentifier: "com.example"), localizedDescription: "Example filter",
                protocolConfiguration: .contentFilter(ContentFilterProtocol(
                    filterDataProviderBundleIdentifier: "com.example.filter", vendorConfiguration: vendor))),
            options: [:])
    }

    static func flow(_ id: UInt64, port: UInt16, host: String? = nil, direction: FilterFlow.Direction = .outbound) -> FilterFlow {
        FilterFlow(
            id: id, direction: direction, transport: .tcp, localAddress: "192.0.2.10", localPort: 40_000,
            remoteAddress: "198.51.100.7", remotePort: port, remoteHostname: host)
    }

    @Test("blockedPorts is read from a list or from the command line's comma string; a bad entry is named")
    func readsPorts() throws {
        #expect(try PortBlockingFilter.ports(.array([.number(25), .number(6881)])) == [25, 6881])
        #expect(try PortBlockingFilter.ports(.string("25, 6881")) == [25, 6881])
        #expect(try PortBlockingFilter.ports(nil) == [])
        #expect(throws: NetExtError.self) { try PortBlockingFilter.ports(.string("25,0")) }
        do throws(NetExtError) {
            _ = try PortBlockingFilter.ports(.array([.number(25), .string("smtp")]))
            Issue.record("a port named 'smtp' was accepted")
        } catch {
            #expect(error.message.contains("blockedPorts[1] 'smtp'"), "the message was: \(error.message)")
        }
    }

    @Test("outbound flows to a blocked port are dropped; every other flow is answered as the school filter answers it")
    func blocksPortsAndDefersTheRest() async throws {
        let vendor: [String: JSONValue] = ["blockedPorts": .string("25,6881"), "rules": .array([.string("blocked.example")])]
        let filter = PortBlockingFilter()
        try await filter.startFilter(context: Self.context(vendor))
        let school = SchoolFilterProvider()
        try await school.startFilter(context: Self.context(vendor))

        #expect(filter.handleNewFlow(Self.flow(1, port: 25)) == .drop)
        #expect(filter.handleNewFlow(Self.flow(2, port: 6881, host: "allowed.example")) == .drop)
        #expect(school.handleNewFlow(Self.flow(1, port: 25)) == .allow, "the school filter alone would have allowed port 25")

        let others = [
            Self.flow(3, port: 443, host: "blocked.example"), Self.flow(4, port: 443, host: "www.blocked.example"),
            Self.flow(5, port: 443, host: "allowed.example"), Self.flow(6, port: 80),
            Self.flow(7, port: 25, direction: .inbound),
        ]
        for flow in others {
            #expect(filter.handleNewFlow(flow) == school.handleNewFlow(flow), "flow to \(flow.remoteEndpoint) \(flow.remoteHostname ?? "")")
        }
        #expect(filter.handleNewFlow(others[0]) == .drop, "the school filter's host rule no longer applies")
        #expect(filter.handleNewFlow(others[2]) == .allow)
    }
}
