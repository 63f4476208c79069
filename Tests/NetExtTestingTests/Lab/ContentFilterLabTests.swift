import Foundation
import Logging
import NetExt
import NetExtCore
import NetExtFilters
import NetExtTesting
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The content-filter checks of scripts/e2e/filter.sh that pings can make, as one Swift body run
/// twice: over the in-process fakes (the filter engine over `SimulatedFilterKernel`, the school
/// filter in-process) and in the namespace lab (netextd's netfilter queue and iptables steering,
/// the school filter as a sandboxed process).
@Suite("Lab bodies: the content filter, over fakes and in namespaces", .serialized)
struct ContentFilterLabTests {
    static let dataProvider = "org.netext.lab.school"

    func withFilterLab(_ mode: LabMode, _ body: (any NetExtLab) async throws -> Void) async throws {
        let lab: any NetExtLab
        switch mode {
        case .inProcess:
            lab = try await InProcessLab(
                providers: [Self.dataProvider: .filterData { SchoolFilterProvider() }],
                logger: ProcessInfo.processInfo.environment["LAB_LOG"] != nil ? Logger(label: "lab") : nil)
        case .namespaces:
            lab = try await NamespaceLab(
                binaryDirectory: TunnelLabTests.binaryDirectory,
                providers: [.init(
                    bundleIdentifier: Self.dataProvider, extensionPoint: .filterData,
                    executable: TunnelLabTests.binaryDirectory + "/netext-filter-provider", arguments: ["school"])])
        }
        do { try await body(lab) } catch {
            await lab.tearDown()
            throw error
        }
        await lab.tearDown()
    }

    func status(_ manager: FilterManager) async -> FilterStatus? {
        try? await manager.status()
    }

    static let short: Duration = .seconds(2)

    @Test(
        "school filter: a blocked address stops answering, others are judged and allowed; a crashed data provider is restarted; disabling removes the steering",
        arguments: TunnelLabTests.modes)
    func schoolFilter(mode: LabMode) async throws {
        try await withFilterLab(mode) { lab in
            #expect(try await lab.ping("203.0.113.2", timeout: Self.short), "the internet did not answer before the filter (\(mode))")
            #expect(try await !lab.contentFilterSteeringIsInstalled())

            var manager = try await FilterManager.shared(client: try await lab.controlClient(), defaultDataProvider: Self.dataProvider)
            manager.localizedDescription = "School"
            manager.providerConfiguration?.failClosed = true
            manager.providerConfiguration?.vendorConfiguration = ["rules": .array([.string("203.0.113.2")])]
            manager.isEnabled = true
            try await manager.saveToPreferences()
            #expect(await lab.eventually { await status(manager)?.state == .running }, "the filter never ran (\(mode))")
            #expect(try await lab.contentFilterSteeringIsInstalled(), "a running filter has no steering (\(mode))")

            // The provider's address rule reaches the kernel (FilterSettings): blocked at once.
            #expect(try await lab.eventually { try await !lab.ping("203.0.113.2", timeout: Self.short) }, "the blocked address still answers (\(mode))")
            // Another address goes to the provider, which allows it.
            #expect(try await lab.ping("198.51.100.1", timeout: Self.short), "an allowed address did not answer (\(mode))")
            let counters = await status(manager)?.counters
            #expect((counters?.flowsAllowed ?? 0) >= 1, "the allowed ping was not judged by the provider: \(String(describing: counters)) (\(mode))")

            #expect(try await lab.crashProvider(Self.dataProvider), "no data provider to crash (\(mode))")
            #expect(await lab.eventually(timeout: .seconds(30)) {
                guard let now = await status(manager) else { return false }
                return now.providerRestarts >= 1 && now.state == .running
            }, "the crashed data provider was not restarted (\(mode))")
            #expect(try await lab.eventually { try await lab.ping("198.51.100.1", timeout: Self.short) }, "allowed flows did not come back after the restart (\(mode))")
            #expect(try await lab.eventually { try await !lab.ping("203.0.113.2", timeout: Self.short) }, "the restarted provider lost its rule (\(mode))")

            manager.isEnabled = false
            try await manager.saveToPreferences()
            #expect(await lab.eventually { await status(manager)?.state == .off }, "disabling left the filter on (\(mode))")
            #expect(try await !lab.contentFilterSteeringIsInstalled(), "disabling left the steering (\(mode))")
            #expect(try await lab.ping("203.0.113.2", timeout: Self.short), "the blocked address still blocked after disabling (\(mode))")
        }
    }
}
