import Foundation
import NetExtCore
import Testing
@testable import NetExtIPC

@Suite("Control-protocol messages")
struct MessageCodingTests {
    static let configuration = Configuration(
        owner: Owner(uid: 1000, appIdentifier: "com.example.app"), localizedDescription: "VPN",
        isEnabled: true, onDemandRules: [.connect(interfaceTypeMatch: .wiFi)],
        protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(providerBundleIdentifier: "com.example.t", serverAddress: "vpn.example.test", providerConfiguration: ["k": .array([.number(1), .null])])),
        revision: 3)

    static let requests: [ControlRequest] = [
        .hello(.init(appIdentifier: "com.example.app")), .listConfigurations, .loadConfiguration(id: UUID()),
        .saveConfiguration(.init(configuration: configuration, password: "pw")), .removeConfiguration(id: UUID()),
        .startConnection(.init(id: UUID(), options: ["username": .string("u")])), .stopConnection(id: UUID()),
        .getStatus(id: nil), .getStatus(id: UUID()), .subscribe, .installProfile(.init(data: Data([0, 1, 2]))),
        .removeProfile(identifier: "com.example.profile"), .listProfiles, .listProviders,
        .sendProviderMessage(.init(id: UUID(), data: Data("status".utf8))), .getFilterStatus, .getFilterLog(limit: 20),
        .urlFilterVerdict(url: "https://www.example.test/a?b=c"), .getURLFilterStatus,
    ]

    @Test("every request round-trips", arguments: requests)
    func requestRoundTrip(request: ControlRequest) throws {
        let envelope = RequestEnvelope(id: 42, request: request)
        let data = try ControlProtocol.makeEncoder().encode(envelope)
        #expect(try ControlProtocol.makeDecoder().decode(RequestEnvelope.self, from: data) == envelope)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["method"] as? String == request.method)
    }

    @Test("an unknown method is a decoding error naming it")
    func unknownMethod() {
        let data = Data(#"{"id":1,"method":"format","params":{}}"#.utf8)
        #expect(throws: DecodingError.self) { try ControlProtocol.makeDecoder().decode(RequestEnvelope.self, from: data) }
    }

    @Test("notifications and errors round-trip")
    func notifications() throws {
        let status = StatusInfo(id: UUID(), name: "VPN", kind: .tunnelProvider, isEnabled: true, status: .connected, connectedDate: Date(timeIntervalSince1970: 1_800_000_000), lastDisconnectError: NetExtError(.providerFailed, "x"))
        for notification in [ControlNotification.statusChanged(.init(previous: .connecting, current: status)), .configurationChanged(.init(id: UUID(), change: .saved, name: "VPN", configuration: Self.configuration))] {
            let data = try ControlProtocol.makeEncoder().encode(NotificationEnvelope(notification))
            #expect(try ControlProtocol.makeDecoder().decode(NotificationEnvelope.self, from: data).notification == notification)
            let header = try ControlProtocol.makeDecoder().decode(ServerMessageHeader.self, from: data)
            #expect(header.id == nil && header.event != nil)
        }
        let error = try ControlProtocol.makeEncoder().encode(ErrorEnvelope(id: 9, error: .stale("changed")))
        #expect(String(decoding: error, as: UTF8.self) == #"{"error":{"code":"configurationStale","message":"changed"},"id":9}"#)
    }

    @Test("provider messages round-trip", arguments: [
        ProviderMessage.hello(bundleIdentifier: "com.example.t", version: 1), .started, .stopped,
        .failed(NetExtError(.connectionFailed, "no")), .stop(reason: .userInitiated),
        .start(ProviderStart(configuration: configuration, options: ["a": .bool(true)], password: nil)),
        .newFlow(FilterFlow(
            id: 7, direction: .outbound, transport: .tcp, localAddress: "198.51.100.2", localPort: 40000, remoteAddress: "2001:db8::1",
            remotePort: 443, remoteHostname: "school.test", url: nil, sourceApplication: SourceApplication(uid: 1000, gid: 100))),
        .controlVerdict(flowID: 7, verdict: .updateRules), .controlVerdict(flowID: UInt64.max, verdict: .drop), .rulesChanged, .rulesApplied,
        .fetchPrefilter(id: 3), .prefilterFetched(id: 3, prefilter: nil, error: nil),
        .prefilterFetched(id: 4, prefilter: URLFilterPrefilter(data: Data([1, 2, 3]), bitCount: 20, hashCount: 3, murmurSeed: 7), error: nil),
        .prefilterFetched(id: 5, prefilter: URLFilterPrefilter(path: "/tmp/p.bin", bitCount: 8, hashCount: 1, murmurSeed: 0), error: nil),
        .prefilterFetched(id: 6, prefilter: nil, error: NetExtError(.providerFailed, "HTTP 500")),
        .applyFilterSettings(FilterSettings(rules: [
            FilterSettings.Rule(remotePrefix: try! IPPrefix("203.0.113.0/24"), action: .drop),
            FilterSettings.Rule(remotePort: 443, transport: .tcp, direction: .outbound, action: .filterData),
        ], defaultAction: .allow)),
        .applyFilterSettings(nil), .filterSettingsApplied, .filterSettingsRefused(NetExtError(.configurationInvalid, "rule 1")),
    ])
    func providerMessages(message: ProviderMessage) throws {
        let data = try ControlProtocol.makeEncoder().encode(message)
        #expect(try ControlProtocol.makeDecoder().decode(ProviderMessage.self, from: data) == message)
    }

    /// Random bytes and mutated valid requests never crash the decoders.
    @Test("garbage never crashes the request decoder")
    func garbage() throws {
        var generator = SystemRandomNumberGenerator()
        let valid = try Self.requests.map { try [UInt8](ControlProtocol.makeEncoder().encode(RequestEnvelope(id: 1, request: $0))) }
        var refused = 0
        for index in 0..<3000 {
            var bytes = valid[index % valid.count]
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            if (try? ControlProtocol.makeDecoder().decode(RequestEnvelope.self, from: Data(bytes))) == nil { refused += 1 }
            _ = try? ControlProtocol.makeDecoder().decode(ProviderMessage.self, from: Data(bytes))
        }
        #expect(refused > 0)
    }
}
