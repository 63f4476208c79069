import Foundation
import NetExt
import NetExtCore
import NetExtIPC
import NetExtLinux
import NetExtTransport
import NIOCore
import Synchronization
import Testing

/// A hotspot helper run by `ProviderHost` (what `netext-...` helper binaries call), with the
/// test playing netextd on the other end of the socketpair: hello, start, commands answered
/// with the command's ID and the helper's annotations, stop.
@Suite("Hotspot helpers hosted (the provider protocol from netextd's side)")
struct HotspotHelperHostTests {
    /// Claims networks named "Café" with high confidence, logs in to them, and knows nothing else.
    final class CaféHelper: HotspotHelper {
        let commands = Mutex<[HotspotHelperCommand.Kind]>([])
        let started = Mutex(false)

        func start(options: [String: JSONValue]) async throws {
            started.withLock { $0 = true }
        }

        func handle(_ command: HotspotHelperCommand) async -> HotspotHelperResponse {
            commands.withLock { $0.append(command.kind) }
            switch command.kind {
            case .filterScanList:
                var response = command.createResponse(.success)
                response.setNetworkList(command.networkList.filter { $0.ssid == "Café" }.map { network in
                    var claimed = network
                    claimed.setConfidence(.high)
                    claimed.setPassword("espresso")
                    return claimed
                })
                return response
            case .evaluate:
                guard var network = command.network else { return command.createResponse(.failure) }
                network.setConfidence(network.ssid == "Café" ? .high : .none)
                var response = command.createResponse(.success)
                response.setNetwork(network)
                return response
            case .authenticate:
                // A helper that writes another ID in its answer still answers this command.
                var response = HotspotHelperResponse(commandID: 999, result: .success)
                response.setNetwork(command.network!)
                return response
            default:
                return command.createResponse(.commandNotRecognized)
            }
        }
    }

    @Test func commandsAreAnsweredWithTheirIDAndTheHelpersAnnotations() async throws {
        let (netextdEnd, helperEnd) = try SocketPair.make()
        let (descriptorsOurs, descriptorsTheirs) = try SocketPair.make()
        defer {
            SocketPair.close(descriptorsOurs)
        }
        let helper = CaféHelper()
        let hosting = Task {
            try await ProviderHost.run(hotspotHelper: helper, bundleIdentifier: "com.example.cafe", descriptor: helperEnd, descriptorSocket: descriptorsTheirs)
        }
        let connection = try await FramedConnection.adopt(descriptor: netextdEnd)
        defer { connection.close() }
        var inbound = connection.frames.makeAsyncIterator()
        func receive() async throws -> ProviderMessage? {
            guard let frame = await inbound.next() else { return nil }
            return try ControlProtocol.makeDecoder().decode(ProviderMessage.self, from: Data(frame.readableBytesView))
        }

        #expect(try await receive() == .hello(bundleIdentifier: "com.example.cafe", version: ControlProtocol.version))
        // A helper has no configuration of its own; netextd's start carries one it ignores.
        let configuration = Configuration(
            owner: Owner(uid: 0, appIdentifier: "com.example.cafe"), localizedDescription: "Café helper", isEnabled: true, onDemandRules: [],
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(providerBundleIdentifier: "com.example.cafe", serverAddress: "-")), revision: 1)
        try await connection.send(ProviderMessage.start(ProviderStart(configuration: configuration, options: ["portal": .string("lab")], password: nil)))
        #expect(try await receive() == .started)
        #expect(helper.started.withLock { $0 })

        let café = HotspotNetwork(ssid: "Café", bssid: "02:00:00:00:00:01", interface: "veth-cafe", didJustJoin: true)
        let other = HotspotNetwork(ssid: "Airport", interface: "veth-cafe")
        try await connection.send(ProviderMessage.hotspotCommand(HotspotHelperCommand(id: 1, kind: .filterScanList, networkList: [café, other])))
        guard case .hotspotResponse(let scan)? = try await receive() else { Issue.record("no answer to the scan list"); return }
        #expect(scan.commandID == 1 && scan.result == .success)
        #expect(scan.networkList.map(\.ssid) == ["Café"])
        #expect(scan.networkList.first?.confidence == .high && scan.networkList.first?.password == "espresso")

        try await connection.send(ProviderMessage.hotspotCommand(HotspotHelperCommand(id: 2, kind: .evaluate, network: other)))
        guard case .hotspotResponse(let declined)? = try await receive() else { Issue.record("no answer to evaluate"); return }
        #expect(declined.commandID == 2 && declined.network?.confidence == HotspotNetwork.Confidence.none)

        try await connection.send(ProviderMessage.hotspotCommand(HotspotHelperCommand(id: 3, kind: .authenticate, network: café)))
        guard case .hotspotResponse(let authenticated)? = try await receive() else { Issue.record("no answer to authenticate"); return }
        #expect(authenticated.commandID == 3, "the answer must carry the command's ID, not the one the helper wrote")
        #expect(authenticated.result == .success)

        try await connection.send(ProviderMessage.hotspotCommand(HotspotHelperCommand(id: 4, kind: .presentUI, network: café)))
        guard case .hotspotResponse(let unknown)? = try await receive() else { Issue.record("no answer to presentUI"); return }
        #expect(unknown.commandID == 4 && unknown.result == .commandNotRecognized)
        #expect(helper.commands.withLock { $0 } == [.filterScanList, .evaluate, .authenticate, .presentUI])

        try await connection.send(ProviderMessage.stop(reason: .userInitiated))
        #expect(try await receive() == .stopped)
        // The host returns once netextd's end is closed after the stop.
        connection.close()
        _ = try? await hosting.value
    }
}
