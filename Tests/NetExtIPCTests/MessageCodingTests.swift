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

    static let requests: [RequestEnvelope] = ([
        Hello(appIdentifier: "com.example.app"), ListConfigurations(), LoadConfiguration(.id(UUID())), LoadConfiguration(.name("Corp VPN")),
        SaveConfiguration(configuration: configuration, password: "pw"), RemoveConfiguration(.id(UUID())), RemoveConfiguration(.name("x")),
        StartConnection(.id(UUID()), options: ["username": .string("u")]), StartConnection(.name("Corp")), StopConnection(.id(UUID())),
        GetStatus(), GetStatus(.id(UUID())), GetStatus(.name("VPN")), Subscribe(), InstallProfile(data: Data([0, 1, 2])),
        RemoveProfile(identifier: "com.example.profile"), ListProfiles(), ListProviders(),
        SendProviderMessage(.id(UUID()), data: Data("status".utf8)), SendProviderMessage(.name("VPN"), data: Data()), GetFilterStatus(), GetFilterLog(limit: 20),
        GetURLFilterVerdict(url: "https://www.example.test/a?b=c"), GetURLFilterStatus(), GetDNSSettingsStatus(),
        DetectCaptivePortal(interface: "wlan0", probeURL: "http://check.example.test/", probeResponse: "online"), DetectCaptivePortal(),
        AllowPortalLogin(user: "www-data", interface: "eth0", seconds: 300), AllowPortalLogin(user: "1000", seconds: 0), GetCaptivePortalStatus(),
        GetHotspotList(), GetHotspotList(interface: "wlan0"), OpenHotspotHelper(), OpenHotspotHelper(helper: "org.netext.hotspot.form"),
        PlaceInApp(app: "org.example.App", executable: "/usr/bin/curl"), PlaceInApp(app: "org.example.App", executable: nil), ListApps(),
    ] as [any ControlMethod]).map { RequestEnvelope(id: 42, method: $0) }

    @Test("every request round-trips", arguments: requests)
    func requestRoundTrip(envelope: RequestEnvelope) throws {
        let data = try ControlProtocol.makeEncoder().encode(envelope)
        #expect(try ControlProtocol.makeDecoder().decode(RequestEnvelope.self, from: data) == envelope)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["method"] as? String == envelope.method.name)
    }

    @Test("every method is in the table once, and every request type is tested")
    func methodTable() {
        #expect(ControlMethods.all.count == ControlMethods.list.count)
        #expect(Set(Self.requests.map(\.method.name)) == Set(ControlMethods.all.keys))
    }

    /// Version 1 clients sent `{"id": UUID}` and empty `params`; those requests still decode.
    @Test("version 1 requests decode", arguments: [
        (#"{"id":1,"method":"startConnection","params":{"id":"6F9C2C4E-1D2B-4E44-9A55-3B8E5B2F1A01","options":{}}}"#, "startConnection"),
        (#"{"id":2,"method":"getStatus","params":{}}"#, "getStatus"),
        (#"{"id":3,"method":"listConfigurations","params":{}}"#, "listConfigurations"),
        (#"{"id":4,"method":"hello","params":{"appIdentifier":"a","version":1}}"#, "hello"),
    ])
    func versionOne(json: String, method: String) throws {
        let envelope = try ControlProtocol.makeDecoder().decode(RequestEnvelope.self, from: Data(json.utf8))
        #expect(envelope.method.name == method)
    }

    @Test("a configuration is named by id or name right in params", arguments: [
        (RequestEnvelope(id: 1, method: StopConnection(.name("Corp"))), #"{"id":1,"method":"stopConnection","params":{"name":"Corp"}}"#),
        (RequestEnvelope(id: 2, method: LoadConfiguration(.id(UUID(uuidString: "6F9C2C4E-1D2B-4E44-9A55-3B8E5B2F1A01")!))),
         #"{"id":2,"method":"loadConfiguration","params":{"id":"6F9C2C4E-1D2B-4E44-9A55-3B8E5B2F1A01"}}"#),
        (RequestEnvelope(id: 3, method: StartConnection(.name("Corp"))), #"{"id":3,"method":"startConnection","params":{"name":"Corp","options":{}}}"#),
        (RequestEnvelope(id: 4, method: GetStatus()), #"{"id":4,"method":"getStatus","params":{}}"#),
    ])
    func referenceWireShape(envelope: RequestEnvelope, json: String) throws {
        #expect(String(decoding: try ControlProtocol.makeEncoder().encode(envelope), as: UTF8.self) == json)
    }

    @Test("a request naming a configuration by both id and name, or by neither, is refused")
    func ambiguousReference() {
        for params in [#"{"id":"6F9C2C4E-1D2B-4E44-9A55-3B8E5B2F1A01","name":"x"}"#, #"{}"#] {
            let data = Data(#"{"id":1,"method":"stopConnection","params":\#(params)}"#.utf8)
            #expect(throws: DecodingError.self) { try ControlProtocol.makeDecoder().decode(RequestEnvelope.self, from: data) }
        }
    }

    @Test("a reply reaches its call while the frame is decoded, with the method's result type")
    func replyRouting() throws {
        final class Router: ReplyRouting, @unchecked Sendable {
            var delivered: [Int: Result<StatusList, NetExtError>] = [:]
            func takePending(_ id: Int) -> PendingReply? {
                guard id != 99 else { return nil }
                return PendingReply(method: "getStatus") { outcome in
                    switch outcome {
                    case .success(let decoder): self.delivered[id] = Result { try StatusList(from: decoder) }.mapError { NetExtError(.protocolError, "\($0)") }
                    case .failure(let error): self.delivered[id] = .failure(error)
                    }
                }
            }
        }
        let router = Router()
        let decoder = ControlProtocol.makeDecoder()
        decoder.userInfo[ServerFrame.routerKey] = router
        let status = StatusInfo(id: UUID(), name: "VPN", kind: .tunnelProvider, isEnabled: true, status: .connected)
        let ok = try ControlProtocol.makeEncoder().encode(ResultEnvelope(id: 1, result: StatusList(statuses: [status])))
        let refused = try ControlProtocol.makeEncoder().encode(ErrorEnvelope(id: 2, error: .unknown("no such")))
        let wrongShape = Data(#"{"id":3,"result":{"statuses":7}}"#.utf8)
        let orphan = Data(#"{"id":99,"result":{}}"#.utf8)
        guard case .reply(id: 1) = try decoder.decode(ServerFrame.self, from: ok) else { Issue.record("not a reply"); return }
        guard case .reply(id: 2) = try decoder.decode(ServerFrame.self, from: refused) else { Issue.record("not a reply"); return }
        guard case .reply(id: 3) = try decoder.decode(ServerFrame.self, from: wrongShape) else { Issue.record("not a reply"); return }
        guard case .unexpectedReply(id: 99) = try decoder.decode(ServerFrame.self, from: orphan) else { Issue.record("not unexpected"); return }
        #expect(try router.delivered[1]?.get().statuses == [status])
        #expect(throws: NetExtError.self) { try router.delivered[2]?.get() }
        #expect(throws: NetExtError.self) { try router.delivered[3]?.get() }
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
            guard case .notification(let decoded) = try ControlProtocol.makeDecoder().decode(ServerFrame.self, from: data) else {
                Issue.record("a notification read as a reply")
                continue
            }
            #expect(decoded == notification)
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
        .setTransparentProxySettings(TransparentProxyNetworkSettings(
            includedNetworkRules: [NetworkRule(destinationNetwork: try! IPPrefix("0.0.0.0/0"), destinationPort: 443, protocol: .tcp)],
            excludedNetworkRules: [NetworkRule(destinationNetwork: try! IPPrefix("2001:db8::/32"))])),
        .setTransparentProxySettings(nil),
        .fetchPrefilter(id: 3), .prefilterFetched(id: 3, prefilter: nil, error: nil),
        .prefilterFetched(id: 4, prefilter: URLFilterPrefilter(data: Data([1, 2, 3]), bitCount: 20, hashCount: 3, murmurSeed: 7), error: nil),
        .prefilterFetched(id: 5, prefilter: URLFilterPrefilter(path: "/tmp/p.bin", bitCount: 8, hashCount: 1, murmurSeed: 0), error: nil),
        .prefilterFetched(id: 6, prefilter: nil, error: NetExtError(.providerFailed, "HTTP 500")),
        .applyFilterSettings(FilterSettings(rules: [
            FilterSettings.Rule(remotePrefix: try! IPPrefix("203.0.113.0/24"), action: .drop),
            FilterSettings.Rule(remotePort: 443, transport: .tcp, direction: .outbound, action: .filterData),
        ], defaultAction: .allow)),
        .applyFilterSettings(nil), .filterSettingsApplied, .filterSettingsRefused(NetExtError(.configurationInvalid, "rule 1")),
        .hotspotCommand(HotspotHelperCommand(id: 9, kind: .evaluate, network: HotspotNetwork(ssid: "Café", bssid: "02:00:00:00:00:01", interface: "wlan0", didJustJoin: true))),
        .hotspotCommand(HotspotHelperCommand(id: 10, kind: .filterScanList, networkList: [
            HotspotNetwork(ssid: "a", interface: "wlan0", signalStrength: 0.4), HotspotNetwork(ssid: "b", interface: "wlan0", isSecure: true),
        ])),
        .hotspotResponse(HotspotHelperResponse(
            commandID: 9, result: .success, network: HotspotNetwork(ssid: "Café", interface: "wlan0", confidence: .high, password: "pw"))),
        .hotspotResponse(HotspotHelperResponse(commandID: 11, result: .temporaryFailure)),
    ])
    func providerMessages(message: ProviderMessage) throws {
        let data = try ControlProtocol.makeEncoder().encode(message)
        #expect(try ControlProtocol.makeDecoder().decode(ProviderMessage.self, from: data) == message)
    }

    /// Random bytes and mutated valid requests never crash the decoders.
    @Test("garbage never crashes the request decoder")
    func garbage() throws {
        var generator = SystemRandomNumberGenerator()
        let valid = try Self.requests.map { try [UInt8](ControlProtocol.makeEncoder().encode($0)) }
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

    @Test("a captive portal detection round-trips, each step's finding and problem kept")
    func captivePortalDetectionRoundTrip() throws {
        let portal = URL(string: "https://198.51.100.1:8443/login")!
        let detections = [
            CaptivePortalDetection(
                interface: "eth0", announcement: .api(URL(string: "https://198.51.100.1:8443/capport")!),
                api: CaptivePortalAPIStatus(isCaptive: true, userPortalURL: portal, secondsRemaining: 30),
                probe: .init(url: URL(string: "http://203.0.113.2/check")!, status: 302, verdict: .captive(redirect: portal))),
            CaptivePortalDetection(interface: "eth1", announcement: .unrestricted, probeProblem: "no answer"),
            CaptivePortalDetection(interface: "eth2", announcementProblem: "no DHCP server answered"),
        ]
        for detection in detections {
            let data = try ControlProtocol.makeEncoder().encode(detection)
            #expect(try ControlProtocol.makeDecoder().decode(CaptivePortalDetection.self, from: data) == detection)
        }
        #expect(detections.map(\.verdict) == [.captive, .open, .unknown])
    }
}
