import Foundation
import HTTPServing
import NetExt
import NetExtFilters
import NetExtTestSupport
import Synchronization
import Testing

/// The reference hotspot helper against a portal served on loopback: what it claims, the form
/// it posts (fields percent-encoded), and each answer mapped to Apple's results.
@Suite("The reference hotspot helper (form login)")
struct FormLoginHotspotHelperTests {
    /// A portal: POST /login with user=guest and the password opens a session; /logout ends it.
    final class Portal: HTTPResponder, Sendable {
        let password: String
        let bodies = Mutex<[String]>([])
        init(password: String) { self.password = password }

        func bodyLimit(method: String, path: String) -> Int { 4096 }
        func endpointLabel(path: String) -> String { path }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            let body = String(decoding: request.body, as: UTF8.self)
            bodies.withLock { $0.append("\(request.path) \(request.header("Content-Type") ?? "-") \(body)") }
            switch request.path {
            case "/login":
                let fields = Dictionary(body.split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { $1 })
                return fields["user"] == "guest" && fields["password"] == password ? .text(200, "welcome") : .text(403, "wrong user or password")
            case "/logout": return .text(200, "bye")
            default: return .text(404, "no such page")
            }
        }
    }

    static func helper(_ base: String, passwordFile: String, extra: [String] = []) throws -> FormLoginHotspotHelper {
        try FormLoginHotspotHelper(arguments: [
            "--login-url", base + "/login", "--logout-url", base + "/logout", "--user", "guest", "--password-file", passwordFile,
            "--interface", "lo",
        ] + extra)
    }

    static func withPasswordFile<T>(_ password: String, _ body: (String) async throws -> T) async throws -> T {
        let path = NSTemporaryDirectory() + "netext-portal-password-\(UUID().uuidString)"
        try (password + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    @Test func claimsItsInterfacesLogsInWithTheFormAndMapsEachAnswer() async throws {
        let password = "p&ss wörd=1"
        let portal = Portal(password: password)
        try await Served.start(portal).use { served in
            try await Self.withPasswordFile(password) { file in
                let helper = try Self.helper(served.base, passwordFile: file)
                var evaluate = HotspotHelperCommand(id: 1, kind: .evaluate, network: HotspotNetwork(interface: "lo"))
                #expect(await helper.handle(evaluate).network?.confidence == .high)
                evaluate.network = HotspotNetwork(interface: "wlan9")
                #expect(await helper.handle(evaluate).network?.confidence == HotspotNetwork.Confidence.none)
                let scan = await helper.handle(HotspotHelperCommand(id: 2, kind: .filterScanList, networkList: [
                    HotspotNetwork(ssid: "a", interface: "lo"), HotspotNetwork(ssid: "b", interface: "wlan9"),
                ]))
                #expect(scan.networkList.map(\.ssid) == ["a"] && scan.networkList.allSatisfy { $0.confidence == .high })
                // --ssid narrows the claim to named networks on its interfaces.
                let named = try Self.helper(served.base, passwordFile: file, extra: ["--ssid", "Café Libre"])
                let namedScan = await named.handle(HotspotHelperCommand(id: 8, kind: .filterScanList, networkList: [
                    HotspotNetwork(ssid: "Café Libre", interface: "lo"), HotspotNetwork(ssid: "Office", interface: "lo"),
                    HotspotNetwork(ssid: "Café Libre", interface: "wlan9"),
                ]))
                #expect(namedScan.networkList.map(\.ssid) == ["Café Libre"] && namedScan.networkList.map(\.interface) == ["lo"])

                let network = HotspotNetwork(interface: "lo")
                let login = await helper.handle(HotspotHelperCommand(id: 3, kind: .authenticate, network: network))
                #expect(login.commandID == 3 && login.result == .success)
                #expect(await helper.handle(HotspotHelperCommand(id: 4, kind: .maintain, network: network)).result == .success)
                #expect(await helper.handle(HotspotHelperCommand(id: 5, kind: .presentUI, network: network)).result == .commandNotRecognized)
                #expect(await helper.handle(HotspotHelperCommand(id: 6, kind: .logoff, network: network)).result == .success)
                // The form as a browser posts it: percent-encoded UTF-8, space as '+'.
                let bodies = portal.bodies.withLock { $0 }
                #expect(bodies.first == "/login application/x-www-form-urlencoded user=guest&password=p%26ss+w%C3%B6rd%3D1", "\(bodies)")
                #expect(bodies.map { $0.split(separator: " ").first.map(String.init) ?? "" } == ["/login", "/login", "/logout"])
            }
            try await Self.withPasswordFile("not it") { file in
                let helper = try Self.helper(served.base, passwordFile: file)
                let refused = await helper.handle(HotspotHelperCommand(id: 7, kind: .authenticate, network: HotspotNetwork(interface: "lo")))
                #expect(refused.result == .failure)
            }
        }
    }

    @Test("the helper's requests leave by the network's own interface: bound to one that cannot reach the portal, nothing arrives")
    func requestsAreBoundToTheNetworksInterface() async throws {
        let portal = Portal(password: "pw")
        try await Served.start(portal).use { served in
            try await Self.withPasswordFile("pw") { file in
                let helper = try Self.helper(served.base, passwordFile: file)
                let away = HotspotNetwork(interface: "nx-absent0")
                #expect(await helper.handle(HotspotHelperCommand(id: 1, kind: .authenticate, network: away)).result == .temporaryFailure)
                #expect(portal.bodies.withLock { $0 }.isEmpty, "no request reached the portal by another way")
                let here = HotspotNetwork(interface: "lo")
                #expect(await helper.handle(HotspotHelperCommand(id: 2, kind: .authenticate, network: here)).result == .success)
                #expect(portal.bodies.withLock { $0.count } == 1)
            }
        }
    }

    @Test func anUnreachablePortalIsATemporaryFailure() async throws {
        // A port nothing listens on: the server is started and stopped to learn one.
        let served = try await Served.start(Portal(password: "x"))
        let base = served.base
        await served.stop()
        try await Self.withPasswordFile("x") { file in
            let helper = try Self.helper(base, passwordFile: file)
            let answer = await helper.handle(HotspotHelperCommand(id: 1, kind: .authenticate, network: HotspotNetwork(interface: "lo")))
            #expect(answer.result == .temporaryFailure)
        }
    }

    @Test func badArgumentsAreRefusedNamingTheOption() async throws {
        try await Self.withPasswordFile("pw") { file in
            func refusal(_ arguments: [String]) -> String {
                do {
                    _ = try FormLoginHotspotHelper(arguments: arguments)
                    return "accepted"
                } catch { return error.message }
            }
            let base = ["--login-url", "https://portal/login", "--user", "g"]
            #expect(refusal(base + ["--password-file", file]) == "accepted")
            #expect(refusal(["--user", "guest", "--password-file", file]).contains("--login-url is required"))
            #expect(refusal(["--login-url", "ftp://portal/login", "--user", "g", "--password-file", file]).contains("--login-url: 'ftp://portal/login' is not an http(s) URL"))
            #expect(refusal(base).contains("--password-file is required"))
            #expect(refusal(base + ["--password", "secret"]).contains("unknown option --password"))
            #expect(refusal(base + ["--password-file", "/nonexistent/pw"]).contains("cannot read /nonexistent/pw"))
            let empty = file + ".empty"
            _ = FileManager.default.createFile(atPath: empty, contents: Data())
            defer { try? FileManager.default.removeItem(atPath: empty) }
            #expect(refusal(base + ["--password-file", empty]).contains("\(empty) is empty"))
            #expect(refusal(base + ["--password-file", file, "--confidence", "medium"]).contains("'medium' is not high or low"))
            #expect(refusal(base + ["--password-file", file, "--field", "=x"]).contains("is not NAME=VALUE"))
            #expect(refusal(base + ["--password-file", file, "--interface"]).contains("'--interface' is not an option with a value"))
        }
    }
}
