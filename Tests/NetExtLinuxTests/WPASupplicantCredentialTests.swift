import Foundation
import NetExtCore
import Synchronization
import Testing

@testable import NetExtLinux

/// Hotspot 2.0 configurations as wpa_supplicant credentials: the fields (wpa_supplicant.conf(5)),
/// the refusals, NetExt's mark, the LIST_CREDS answer, and the control-interface client against
/// a stand-in datagram socket. The real wpa_supplicant takes them in scripts/e2e/wifi-wpa-supplicant.sh.
@Suite("wpa_supplicant credentials for Hotspot 2.0")
struct WPASupplicantCredentialTests {
    static func passpoint(
        _ types: [HotspotEAPSettings.EAPType] = [.ttls], realms: [String] = [], ois: [String] = [], inner: HotspotEAPSettings.TTLSInnerAuthenticationType = .mschapv2
    ) -> HotspotConfiguration {
        HotspotConfiguration(
            hs20Settings: HotspotHS20Settings(domainName: "operator.example", roamingConsortiumOIs: ois, naiRealmNames: realms),
            eapSettings: HotspotEAPSettings(supportedEAPTypes: types, username: "ada", password: "p\"ss w0rd;", ttlsInnerAuthenticationType: inner, trustedServerNames: ["radius.operator.example"]))
    }

    /// The fields with string values decoded from their hex.
    static func decoded(_ fields: [(name: String, value: String)]) -> [String: String] {
        var result: [String: String] = [:]
        for field in fields {
            let bytes = WPASupplicantNetworkOptions.unhex(field.value)
            result[field.name] = ["eap", "temporary"].contains(field.name) ? field.value : bytes.map { String(decoding: $0, as: UTF8.self) } ?? "not hex: \(field.value)"
        }
        return result
    }

    @Test("TTLS: realm (the domain when none is named), domain, username, password as hex, phase 2, OIs, server name, CA bundle, the mark last but temporary")
    func ttlsFields() throws {
        var configuration = Self.passpoint(ois: ["001BC50460", "5A03BA"])
        configuration.lifeTimeInDays = 2
        let fields = try WPASupplicantCredential.fields(for: configuration, now: 1_000, caBundle: "/etc/ssl/certs/ca-certificates.crt")
        #expect(fields.map(\.name) == ["eap", "realm", "domain", "username", "password", "phase2", "roaming_consortiums", "domain_suffix_match", "ca_cert", "provisioning_sp"])
        let values = Self.decoded(fields)
        #expect(values["eap"] == "TTLS")
        #expect(values["realm"] == "operator.example")
        #expect(values["domain"] == "operator.example")
        #expect(values["password"] == "p\"ss w0rd;", "any character arrives: the value travels as hex")
        let password = fields.first { $0.name == "password" }!.value
        #expect(password.allSatisfy { $0.isHexDigit })
        #expect(values["phase2"] == "auth=MSCHAPV2")
        #expect(values["roaming_consortiums"] == "001bc50460,5a03ba")
        #expect(values["domain_suffix_match"] == "radius.operator.example")
        #expect(values["provisioning_sp"] == "netext:173800:" + WPASupplicantNetworkOptions.hex(Array("operator.example".utf8)))
        #expect(WPASupplicantCredential.mark(inProvisioningSP: values["provisioning_sp"]!)! == ("operator.example", 173_800))
    }

    @Test("PEAP, both methods (the hotspot's realm list chooses), a named realm, PAP inside TTLS, join once (temporary, not saved)")
    func variants() throws {
        #expect(Self.decoded(try WPASupplicantCredential.fields(for: Self.passpoint([.peap]), now: 0, caBundle: nil))["eap"] == "PEAP")
        let both = try WPASupplicantCredential.fields(for: Self.passpoint([.peap, .ttls], realms: ["wlan.operator.example"], inner: .pap), now: 0, caBundle: nil)
        let values = Self.decoded(both)
        #expect(values["eap"] == nil)
        #expect(values["realm"] == "wlan.operator.example")
        #expect(values["phase2"] == "auth=PAP")
        #expect(values["ca_cert"] == nil)
        var once = Self.passpoint()
        once.joinOnce = true
        let onceFields = try WPASupplicantCredential.fields(for: once, now: 0, caBundle: nil)
        #expect(onceFields.last! == (name: "temporary", value: "1"))
        #expect(Self.decoded(onceFields)["provisioning_sp"] == "netext::" + WPASupplicantNetworkOptions.hex(Array("operator.example".utf8)))
    }

    @Test("refused, saying why: no roaming, MCC/MNC, two realms, an outer identity, FAST, EAP inside TTLS, a control character, a network that is not Hotspot 2.0")
    func refusals() {
        func refused(_ configuration: HotspotConfiguration, _ words: String) {
            #expect(performing: { try WPASupplicantCredential.fields(for: configuration, now: 0, caBundle: nil) }, throws: { "\($0)".contains(words) })
        }
        var noRoaming = Self.passpoint()
        if case .hotspot20(var hs20, let eap) = noRoaming.security { hs20.isRoamingEnabled = false; noRoaming.security = .hotspot20(hs20, eap) }
        refused(noRoaming, "roaming")
        var cellular = Self.passpoint()
        if case .hotspot20(var hs20, let eap) = cellular.security { hs20.mccAndMNCs = ["310410"]; cellular.security = .hotspot20(hs20, eap) }
        refused(cellular, "MCC/MNC")
        refused(Self.passpoint(realms: ["a.example", "b.example"]), "one NAI realm")
        var outer = Self.passpoint()
        if case .hotspot20(let hs20, var eap) = outer.security { eap.outerIdentity = "anon@operator.example"; outer.security = .hotspot20(hs20, eap) }
        refused(outer, "outer identity")
        refused(Self.passpoint([.fast]), "EAP-TTLS or PEAP")
        refused(Self.passpoint(inner: .eap), "EAP inside EAP-TTLS")
        var newline = Self.passpoint()
        if case .hotspot20(let hs20, var eap) = newline.security { eap.username = "ada\nnetwork={"; newline.security = .hotspot20(hs20, eap) }
        refused(newline, "control character")
        refused(HotspotConfiguration(ssid: "Office"), "Only a Hotspot 2.0")
    }

    @Test("LIST_CREDS: the ids after the heading; lines without an id are skipped; 2,000 damaged answers never trap")
    func listAnswer() {
        let answer = "cred id / realm / username / domain / imsi\n0\tother.example\tbob\tother.example\t\n3\toperator.example\t\t\t\n"
        #expect(WPASupplicantCredential.ids(inList: answer) == [0, 3])
        #expect(WPASupplicantCredential.ids(inList: "cred id / realm / username / domain / imsi\n").isEmpty)
        #expect(WPASupplicantCredential.ids(inList: "heading\nx\t1\n\n12\n") == [12])
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789\t\n abc/-".utf8)
        for _ in 0..<2_000 {
            let text = String(decoding: (0..<Int.random(in: 0...80, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
            for id in WPASupplicantCredential.ids(inList: text) { #expect(id >= 0) }
            _ = WPASupplicantCredential.mark(inProvisioningSP: text)
        }
    }

    @Test("ctrl_interface as wpa_supplicant reports it: a path, or DIR=… GROUP=…; empty is none")
    func controlDirectory() {
        #expect(WPASupplicantControl.directory(fromCtrlInterface: "/run/wpa_supplicant") == "/run/wpa_supplicant")
        #expect(WPASupplicantControl.directory(fromCtrlInterface: "DIR=/run/wpa_supplicant GROUP=netdev") == "/run/wpa_supplicant")
        #expect(WPASupplicantControl.directory(fromCtrlInterface: "") == nil)
        #expect(WPASupplicantControl.directory(fromCtrlInterface: "DIR= GROUP=netdev") == nil)
    }

    @Test("the control client: a command and its answer, events skipped, FAIL refused naming the command but not its value, silence timed out, no socket said")
    func controlClient() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-ctrl-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try ControlStandIn(path: directory + "/wlan7") { command in
            switch command {
            case "PING": ["PONG\n"]
            case "LIST_CREDS": ["<3>CTRL-EVENT-SCAN-STARTED ", "cred id / realm / username / domain / imsi\n4\tlab\t\t\t\n"]
            case "QUIET": []
            default: ["FAIL\n"]
            }
        }
        defer { server.stop() }
        let control = try WPASupplicantControl(directory: directory, interface: "wlan7", timeoutMilliseconds: 500)
        #expect(try control.request("PING") == "PONG\n")
        #expect(WPASupplicantCredential.ids(inList: try control.request("LIST_CREDS")) == [4])
        #expect(performing: { try control.request("SET_CRED 4 password 736563726574") }, throws: { error in
            let text = "\(error)"
            return text.contains("refused SET_CRED 4") && !text.contains("736563726574")
        })
        #expect(performing: { try control.request("QUIET") }, throws: { "\($0)".contains("did not answer QUIET") })
        #expect(server.commands == ["PING", "LIST_CREDS", "SET_CRED 4 password 736563726574", "QUIET"])
        #expect(performing: { try WPASupplicantControl(directory: directory, interface: "wlan8") }, throws: { "\($0)".contains("cannot be reached") })
    }
}

/// A stand-in for wpa_supplicant's control socket: a datagram socket at `path` answering each
/// command with `answers(command)` (each string one datagram) to the address it came from.
/// Its thread ends at `stop()` or after 100 commands.
final class ControlStandIn: @unchecked Sendable {
    let fd: Int32
    let path: String
    private let received = Mutex<[String]>([])
    private let stopped = Mutex(false)
    var commands: [String] { received.withLock { $0 } }

    init(path: String, answers: @escaping @Sendable (String) -> [String]) throws {
        self.path = path
        guard let (socketAddress, length) = TCPSocket.unixAddress(path) else { throw SystemError("address", errno: EINVAL, subject: path) }
        var address = socketAddress
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0 else { throw SystemError("bind", errno: errno, subject: path) }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        Thread.detachNewThread { [self] in
            var handled = 0
            while handled < 100, !stopped.withLock({ $0 }) {
                var buffer = [UInt8](repeating: 0, count: 4096)
                var peer = sockaddr_un()
                var peerLength = socklen_t(MemoryLayout<sockaddr_un>.size)
                let got = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &peer) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &peerLength) } }
                }
                guard got > 0 else { continue }
                handled += 1
                let command = String(decoding: buffer[..<got], as: UTF8.self)
                received.withLock { $0.append(command) }
                for answer in answers(command) {
                    let bytes = Array(answer.utf8)
                    _ = bytes.withUnsafeBytes { raw in
                        withUnsafePointer(to: &peer) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, peerLength) } }
                    }
                }
            }
            close(fd)
            unlink(path)
        }
    }

    func stop() { stopped.withLock { $0 = true } }
}
