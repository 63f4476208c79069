import Foundation
import Logging
import NetExt
import NetExtCore
import NetExtTesting
import NetExtTestSupport
import NetExtTunnel
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The tunnel and kill-switch checks of scripts/e2e/tunnel.sh and killswitch.sh as Swift test
/// bodies, each run twice: over the in-process fakes (no root) and in the namespace lab with
/// the real binaries (root; skipped otherwise). The body cannot tell which it runs on.
@Suite("Lab bodies: the reference tunnel and the kill switch, over fakes and in namespaces", .serialized)
struct TunnelLabTests {
    /// The modes this machine can run: namespaces need root and the built binaries.
    static var modes: [LabMode] {
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: binaryDirectory + "/netextd") ? [.inProcess, .namespaces] : [.inProcess]
    }

    static let binaryDirectory = BuiltBinaries.directory

    /// Builds the lab and the office of `mode`, runs `body`, and tears both down whatever happens.
    func withTunnelLab(_ mode: LabMode, pushesDNS: Bool = true, _ body: (any NetExtLab, any TunnelOffice) async throws -> Void) async throws {
        let lab: any NetExtLab
        let office: any TunnelOffice
        switch mode {
        case .inProcess:
            lab = try await InProcessLab(providers: [TunnelOfficeSettings.bundle: .tunnel { ReferenceTunnelProvider() }], logger: ProcessInfo.processInfo.environment["LAB_LOG"] != nil ? Logger(label: "lab") : nil)
            do { office = try await InProcessTunnelOffice(pushesDNS: pushesDNS) } catch {
                await lab.tearDown()
                throw error
            }
        case .namespaces:
            let namespaces = try await NamespaceLab(
                binaryDirectory: Self.binaryDirectory,
                providers: [.init(bundleIdentifier: TunnelOfficeSettings.bundle, executable: Self.binaryDirectory + "/netext-tunnel-provider")])
            lab = namespaces
            do { office = try await NamespaceTunnelOffice(lab: namespaces, binaryDirectory: Self.binaryDirectory, pushesDNS: pushesDNS) } catch {
                await lab.tearDown()
                throw error
            }
        }
        do {
            try await body(lab, office)
        } catch {
            await office.stop()
            await lab.tearDown()
            throw error
        }
        await office.stop()
        await lab.tearDown()
    }

    /// A saved, enabled configuration of the reference tunnel provider for `office`.
    func officeVPN(_ lab: any NetExtLab, _ office: any TunnelOffice, killSwitch: Bool = false, onDemandRules: [OnDemandRule] = []) async throws -> TunnelProviderManager {
        let client = try await lab.controlClient()
        var manager = TunnelProviderManager(client: client, providerBundleIdentifier: TunnelOfficeSettings.bundle, serverAddress: office.serverAddress)
        manager.localizedDescription = "Office"
        manager.isEnabled = true
        manager.protocolConfiguration?.providerConfiguration = ["serverPublicKey": .string(office.serverPublicKey)]
        manager.protocolConfiguration?.includeAllNetworks = killSwitch
        manager.protocolConfiguration?.excludeLocalNetworks = killSwitch
        manager.onDemandRules = onDemandRules
        manager.isOnDemandEnabled = !onDemandRules.isEmpty
        try await manager.saveToPreferences(password: office.clientPrivateKey)
        return manager
    }

    func status(_ manager: TunnelProviderManager) async -> ConnectionStatus? {
        try? await manager.connection.statusInfo().status
    }

    static let short: Duration = .seconds(2)

    @Test("split tunnel: the office answers only through the tunnel, the server's routes and name server are applied, a stop undoes them", arguments: TunnelLabTests.modes)
    func splitTunnel(mode: LabMode) async throws {
        try await withTunnelLab(mode) { lab, office in
            #expect(try await !lab.ping("10.20.0.5", timeout: Self.short), "the office answered before the VPN (\(mode))")
            #expect(try await lab.ping("203.0.113.1", timeout: Self.short), "the internet did not answer directly (\(mode))")
            let manager = try await officeVPN(lab, office)
            try await manager.connection.startVPNTunnel()
            #expect(await lab.eventually { await status(manager) == .connected }, "never connected (\(mode))")
            #expect(try await lab.tunnelRoutes() == ["10.20.0.0/16"])
            #expect(try await lab.eventually { try await lab.ping("10.20.0.5", timeout: Self.short) }, "the office did not answer through the tunnel (\(mode))")
            #expect(try await lab.ping("203.0.113.1", timeout: Self.short), "split tunnel: the internet stopped answering directly (\(mode))")
            #expect(try await lab.nameservers() == ["10.20.0.53"])

            try await manager.connection.stopVPNTunnel()
            #expect(await lab.eventually { await status(manager) == .disconnected })
            #expect(try await lab.eventually { try await lab.tunnelRoutes().isEmpty }, "routes left after the stop (\(mode))")
            #expect(try await !lab.ping("10.20.0.5", timeout: Self.short))
            #expect(try await lab.nameservers() == ["198.51.100.53"])
        }
    }

    @Test("kill switch: everything through the tunnel but the local network; a crashed provider leaves everything blocked until the configuration is disabled", arguments: TunnelLabTests.modes)
    func killSwitch(mode: LabMode) async throws {
        try await withTunnelLab(mode) { lab, office in
            var manager = try await officeVPN(lab, office, killSwitch: true)
            try await manager.connection.startVPNTunnel()
            #expect(await lab.eventually { await status(manager) == .connected }, "never connected (\(mode))")
            #expect(try await lab.trafficGuardIsInstalled(), "a connected kill-switch configuration has no guard (\(mode))")
            #expect(try await lab.tunnelRoutes().contains("0.0.0.0/0"))
            #expect(try await lab.eventually { try await lab.ping("10.20.0.5", timeout: Self.short) }, "the office did not answer through the tunnel (\(mode))")
            #expect(try await lab.ping("198.51.100.1", timeout: Self.short), "excludeLocalNetworks: the local router did not answer directly (\(mode))")

            #expect(try await lab.crashProvider(TunnelOfficeSettings.bundle))
            let disconnected = await lab.eventually { await status(manager) == .disconnected }
            let after = await status(manager)
            #expect(disconnected, "a crashed provider left the status at \(String(describing: after)) (\(mode))")
            #expect(try await lab.trafficGuardIsInstalled(), "the guard went with the provider (\(mode))")
            #expect(try await !lab.ping("203.0.113.1", timeout: Self.short), "the internet answered with the provider dead: a leak (\(mode))")
            #expect(try await !lab.ping("10.20.0.5", timeout: Self.short), "the office answered with the provider dead (\(mode))")
            #expect(try await lab.ping("198.51.100.1", timeout: Self.short), "the local network is blocked too (\(mode))")

            manager.isEnabled = false
            try await manager.saveToPreferences()
            #expect(try await lab.eventually { try await !lab.trafficGuardIsInstalled() }, "disabling left the guard (\(mode))")
            #expect(try await lab.ping("203.0.113.1", timeout: Self.short), "the internet still blocked after disabling (\(mode))")
        }
    }

    @Test("connect on demand: a Connect rule brings the VPN up unasked, a crashed provider is restarted, a search-domain rule disconnects on the office network and connects again off it", arguments: TunnelLabTests.modes)
    func onDemand(mode: LabMode) async throws {
        try await withTunnelLab(mode, pushesDNS: false) { lab, office in
            try await lab.rewriteResolverFile("nameserver 198.51.100.53\nsearch home.test\n")
            let rules = [
                OnDemandRule(action: .disconnect, dnsSearchDomainMatch: ["*.office.test"]),
                OnDemandRule(action: .connect, interfaceTypeMatch: .ethernet),
            ]
            let manager = try await officeVPN(lab, office, onDemandRules: rules)
            #expect(await lab.eventually { await status(manager) == .connected }, "the Connect rule did not bring the VPN up (\(mode))")
            #expect(try await lab.eventually { try await lab.ping("10.20.0.5", timeout: Self.short) }, "the office did not answer through the tunnel (\(mode))")

            #expect(try await lab.crashProvider(TunnelOfficeSettings.bundle))
            let restarted = await lab.eventually(timeout: .seconds(30)) {
                let routes = (try? await lab.tunnelRoutes()) ?? []
                return await status(manager) == .connected && !routes.isEmpty
            }
            #expect(restarted, "on demand did not restart the crashed provider (\(mode))")
            #expect(try await lab.eventually { try await lab.ping("10.20.0.5", timeout: Self.short) }, "the restarted tunnel does not carry the office (\(mode))")

            try await lab.rewriteResolverFile("nameserver 198.51.100.53\nsearch corp.office.test\n")
            #expect(await lab.eventually { await status(manager) == .disconnected }, "the search-domain rule did not disconnect (\(mode))")
            #expect(try await !lab.ping("10.20.0.5", timeout: Self.short))
            try await lab.rewriteResolverFile("nameserver 198.51.100.53\nsearch home.test\n")
            #expect(await lab.eventually { await status(manager) == .connected }, "leaving the office network did not reconnect (\(mode))")
        }
    }
}
