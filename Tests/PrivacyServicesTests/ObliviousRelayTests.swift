import Foundation
import HTTPServing
import ObliviousHTTP
import Testing
@testable import PrivacyServices
@testable import URLFilter

@Suite("Oblivious HTTP gateway and relay")
struct ObliviousRelayTests {
    struct Chain {
        let directory: TemporaryDirectory
        let target: RecordingTarget
        let targetServer: Served
        let ring: GatewayKeyRing
        let gatewayTap: Wiretap
        let gateway: Served
        let relay: Served

        static let lifetime: UInt64 = 86400

        /// `keysBornAt`: when the ring's first key was made (in the past to test rotation).
        static func start(keysBornAt: UInt64 = UInt64(Date().timeIntervalSince1970)) async throws -> Chain {
            let directory = TemporaryDirectory()
            let target = RecordingTarget()
            let targetServer = try await Served.start(target)
            let ring = try GatewayKeyRing(directory: directory.path + "/gateway-keys", schedule: try KeyRotationSchedule(lifetime: lifetime, overlap: 3600), now: keysBornAt)
            let gatewayTap = Wiretap(GatewayResponder(keys: ring, targets: ["service.test": targetServer.url("")]))
            let gateway = try await Served.start(gatewayTap)
            let relay = try await Served.start(RelayResponder(gatewayURL: gateway.url("/gateway"), keysURL: gateway.url("/ohttp-keys")))
            return Chain(directory: directory, target: target, targetServer: targetServer, ring: ring, gatewayTap: gatewayTap, gateway: gateway, relay: relay)
        }

        func stop() async {
            await relay.stop()
            await gateway.stop()
            await targetServer.stop()
            directory.remove()
        }

        var transport: ObliviousTransport { ObliviousTransport(relayURL: relay.url("/relay"), timeout: testClientTimeout) }
    }

    @Test func requestsReachTheTargetWithoutIdentifyingHeadersAndComeBack() async throws {
        let chain = try await Chain.start()
        defer { Task { await chain.stop() } }
        let secret = Array("the-url-that-must-stay-private".utf8)
        let request = ServiceRequest(
            method: "POST", url: URL(string: "http://service.test/queries?x=1")!,
            headers: [("Content-Type", "application/x-protobuf"), ("User-Identifier", "pseudonym"), ("X-Client-Secret", "do-not-forward"), ("Cookie", "c=1")],
            body: secret)
        let answer = try await chain.transport.send(request)
        #expect(answer.status == 200)
        #expect(answer.body == secret.reversed())
        #expect(answer.header("X-Target-Secret") == nil)
        #expect(answer.header("content-type") == "application/octet-stream")
        let seen = try #require(chain.target.requests.withLock { $0.first })
        #expect(seen.method == "POST" && seen.path == "/queries" && seen.query == "x=1")
        #expect(seen.body == secret)
        #expect(seen.header("User-Identifier") == "pseudonym")
        for name in ["X-Client-Secret", "Cookie", "Forwarded", "X-Forwarded-For", "X-Real-IP", "Via"] { #expect(seen.header(name) == nil, "\(name) reached the target") }
        // What the gateway received from the relay: opaque bytes and one Content-Type.
        let gatewayBodies = chain.gatewayTap.bodies.withLock { $0 }
        #expect(gatewayBodies.count == 2)  // the key fetch and the request
        #expect(!gatewayBodies.contains { $0.contains(bytes: secret) })
        let relayed = try #require(chain.gatewayTap.headers.withLock { $0.last })
        for name in ["Forwarded", "X-Forwarded-For", "X-Real-IP", "Via", "Cookie", "User-Identifier"] {
            #expect(!relayed.contains { $0.name.lowercased() == name.lowercased() }, "\(name) reached the gateway")
        }
    }

    @Test func refusesTargetsOutsideTheAllowListInsideTheEncryption() async throws {
        let chain = try await Chain.start()
        defer { Task { await chain.stop() } }
        let answer = try await chain.transport.send(ServiceRequest(method: "GET", url: URL(string: "http://127.0.0.1:\(chain.targetServer.port)/")!))
        #expect(answer.status == 403)
        #expect(chain.target.requests.withLock { $0.isEmpty })
    }

    @Test func refusesWhatItCannotOpenInTheClear() async throws {
        let chain = try await Chain.start()
        defer { Task { await chain.stop() } }
        let direct = DirectTransport(timeout: testClientTimeout)
        let wrongType = try await direct.send(ServiceRequest(method: "POST", url: chain.relay.url("/relay"), headers: [("Content-Type", "text/plain")], body: [1]))
        #expect(wrongType.status == 415)
        let garbage = try await direct.send(ServiceRequest(method: "POST", url: chain.relay.url("/relay"), headers: [("Content-Type", "message/ohttp-req")], body: [UInt8](repeating: 7, count: 80)))
        #expect(garbage.status == 400)
        let keyID = chain.ring.keys[0].keyID
        let truncated = try await direct.send(ServiceRequest(method: "POST", url: chain.gateway.url("/gateway"), headers: [("Content-Type", "message/ohttp-req")], body: [keyID, 0, 0x20]))
        #expect(truncated.status == 400)
        #expect(truncated.message.contains("cannot open"))
        #expect(try await direct.send(ServiceRequest(method: "GET", url: chain.relay.url("/relay"))).status == 405)
        #expect(try await direct.send(ServiceRequest(method: "GET", url: chain.relay.url("/nothing"))).status == 404)
    }

    @Test func clientFollowsAKeyRotation() async throws {
        let now = UInt64(Date().timeIntervalSince1970)
        let chain = try await Chain.start(keysBornAt: now - 3 * Chain.lifetime)
        defer { Task { await chain.stop() } }
        let transport = chain.transport
        let request = ServiceRequest(method: "POST", url: URL(string: "http://service.test/x")!, body: [1, 2, 3])
        #expect(try await transport.send(request).status == 200)
        let oldID = try await transport.keyConfig().keyID
        // Three lifetimes on, a successor takes over at once and the old key serves its overlap;
        // after the overlap it is gone. The client's cached configuration is then stale: the
        // gateway answers 400, and the client fetches the configurations again.
        #expect(try chain.ring.rotate(now: now))
        #expect(chain.ring.keys.map(\.keyID) == [oldID, oldID &+ 1])
        #expect(try chain.ring.rotate(now: now + 3600))
        #expect(chain.ring.keys.map(\.keyID) == [oldID &+ 1])
        let answer = try await transport.send(request)
        #expect(answer.status == 200)
        #expect(answer.body == [3, 2, 1])
        let newID = try await transport.keyConfig().keyID
        #expect(newID != oldID)
        #expect(newID == chain.ring.keys.last?.keyID)
        #expect(chain.target.requests.withLock { $0.count } == 2)
    }

    @Test func keyConfigurationListsRoundTripAndTruncationIsRefused() throws {
        let ring = chainlessRing()
        let list = ring.publishedConfigs(now: UInt64.max)
        let configs = try OHTTPKeyConfig.decodeList(list)
        #expect(configs.map(\.keyID) == ring.keys.reversed().map(\.keyID))
        #expect(throws: ObliviousHTTPError.self) { _ = try OHTTPKeyConfig.decodeList(Array(list.dropLast())) }
        for cut in 0..<list.count { _ = try? OHTTPKeyConfig.decodeList(Array(list.prefix(cut))) }
    }

    func chainlessRing() -> GatewayKeyRing {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        return try! GatewayKeyRing(directory: directory.path, schedule: try! KeyRotationSchedule(lifetime: 100, overlap: 50), now: 1000)
    }
}
