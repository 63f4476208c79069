import Foundation
import NetExtCore
import Testing
@testable import NetExtDaemon

@Suite("One enabled configuration of a kind")
struct ActiveConfigurationChangeTests {
    static func filter(_ id: UUID = UUID(), enabled: Bool = true, organization: String = "A", name: String = "F") -> Configuration {
        Configuration(id: id, owner: Owner(uid: 0, appIdentifier: "t"), localizedDescription: name, isEnabled: enabled,
                      protocolConfiguration: .contentFilter(ContentFilterProtocol(filterDataProviderBundleIdentifier: "d", organization: organization)))
    }

    @Test func decisions() {
        let running = Self.filter()
        let other = Self.filter()
        #expect(ActiveConfigurationChange(active: nil, incoming: other, removed: false) == .start(stopping: nil))
        #expect(ActiveConfigurationChange(active: running, incoming: other, removed: false) == .start(stopping: .superceded))
        #expect(ActiveConfigurationChange(active: running, incoming: Self.filter(running.id, name: "G"), removed: false) == .refresh)
        #expect(ActiveConfigurationChange(active: running, incoming: Self.filter(running.id, organization: "B"), removed: false) == .start(stopping: .superceded))
        #expect(ActiveConfigurationChange(active: running, incoming: Self.filter(running.id, enabled: false), removed: false) == .stop(.configurationDisabled))
        #expect(ActiveConfigurationChange(active: running, incoming: running, removed: true) == .stop(.configurationRemoved))
        #expect(ActiveConfigurationChange(active: running, incoming: Self.filter(enabled: false), removed: false) == .ignore)
        #expect(ActiveConfigurationChange(active: nil, incoming: other, removed: true) == .ignore)
    }
}
