// Creates, saves, reloads and lists a VPN configuration through netextd, the way an app on
// Apple's platforms uses NETunnelProviderManager. Run it while netextd is running:
//   swift run netext-example-manager
import Foundation
import NetExt

do {
    let client = try await ControlClient.connect(appIdentifier: "com.example.vpn-app")
    defer { client.close() }

    // Create and save.
    var manager = TunnelProviderManager(client: client, providerBundleIdentifier: "com.netext.test-provider", serverAddress: "vpn.example.test")
    manager.localizedDescription = "Example VPN"
    manager.isEnabled = true
    manager.isOnDemandEnabled = true
    manager.onDemandRules = [.connect(interfaceTypeMatch: .any)]
    manager.protocolConfiguration?.username = "alice"
    try await manager.saveToPreferences(password: "secret")
    print("saved \(manager.localizedDescription) at revision \(manager.configuration.revision)")

    // Reload (as Apple recommends after a save) and list every configuration of this app.
    try await manager.loadFromPreferences()
    for loaded in try await TunnelProviderManager.loadAllFromPreferences(client: client) {
        let status = try await loaded.connection.status
        print("\(loaded.localizedDescription): enabled=\(loaded.isEnabled) on-demand rules=\(loaded.onDemandRules.count) status=\(status.rawValue)")
    }

    // Clean up after the example.
    try await manager.removeFromPreferences()
    print("removed \(manager.localizedDescription)")
} catch {
    print("error: \(error)")
    exit(1)
}
