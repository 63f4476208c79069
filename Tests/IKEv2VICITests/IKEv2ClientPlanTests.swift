import IKEv2VICI
import NetExtCore
import Testing

/// What netextd asks strongSwan's charon to do for a personal VPN.
@Suite("IKEv2: the client plan for charon")
struct IKEv2ClientPlanTests {
    static func plan(_ settings: IKEv2Protocol) -> IKEv2ClientPlan {
        IKEv2ClientPlan(settings: settings, routingTable: 7163, rulePriority: 7354)
    }

    static let pskSettings = IKEv2Protocol(
        serverAddress: "203.0.113.9", remoteIdentifier: "vpn.example.test", localIdentifier: "laptop@example.test",
        authenticationMethod: .sharedSecret, sharedSecretReference: "ref")

    @Test("shared secret: both sides authenticate with the PSK, identities from the settings, all traffic asked for")
    func sharedSecretConnection() throws {
        let plan = Self.plan(Self.pskSettings)
        let authentication = try plan.authentication(hasSharedSecret: true, hasPassword: false)
        #expect(authentication == .sharedSecret)
        let connection = try #require(plan.loadConnection(authentication: authentication)[section: "netext"])
        #expect(connection[text: "version"] == "2")
        #expect(connection[list: "remote_addrs"] == ["203.0.113.9"])
        #expect(connection[list: "vips"] == ["0.0.0.0", "::"])
        #expect(connection[section: "local"]?[text: "auth"] == "psk")
        #expect(connection[section: "local"]?[text: "id"] == "laptop@example.test")
        #expect(connection[section: "remote"]?[text: "auth"] == "psk")
        #expect(connection[section: "remote"]?[text: "id"] == "vpn.example.test")
        let child = try #require(connection[section: "children"]?[section: "netext"])
        #expect(child[list: "remote_ts"] == ["0.0.0.0/0", "::/0"])
        let secrets = plan.loadSecrets(authentication: authentication, sharedSecret: "s3cret", password: nil)
        #expect(secrets.count == 1)
        #expect(secrets[0][text: "type"] == "IKE" && secrets[0][text: "data"] == "s3cret")
        #expect(secrets[0][list: "owners"] == ["laptop@example.test", "vpn.example.test"])
    }

    @Test("without a remote identifier the server must prove its address; without a local one the client uses its address")
    func defaultIdentities() {
        let plan = Self.plan(IKEv2Protocol(serverAddress: "203.0.113.9", authenticationMethod: .sharedSecret))
        #expect(plan.remoteIdentity == "203.0.113.9")
        #expect(plan.localIdentity == nil)
        #expect(plan.loadConnection(authentication: .sharedSecret)[section: "netext"]?[section: "local"]?[text: "id"] == nil)
        #expect(plan.loadSecrets(authentication: .sharedSecret, sharedSecret: "x", password: nil)[0][list: "owners"] == ["203.0.113.9"])
    }

    @Test("extended authentication: EAP-MSCHAPv2 with the username and password, the server still with the PSK")
    func extendedAuthentication() throws {
        var settings = Self.pskSettings
        settings.useExtendedAuthentication = true
        settings.username = "alice"
        let plan = Self.plan(settings)
        #expect(throws: NetExtError.self) { try plan.authentication(hasSharedSecret: true, hasPassword: false) }
        let authentication = try plan.authentication(hasSharedSecret: true, hasPassword: true)
        #expect(authentication == .extendedWithSharedSecret)
        let local = plan.loadConnection(authentication: authentication)[section: "netext"]?[section: "local"]
        #expect(local?[text: "auth"] == "eap-mschapv2" && local?[text: "eap_id"] == "alice")
        let secrets = plan.loadSecrets(authentication: authentication, sharedSecret: "psk", password: "pw")
        #expect(secrets.map { $0[text: "type"] } == ["IKE", "EAP"])
        #expect(secrets[1][list: "owners"] == ["alice"] && secrets[1][text: "data"] == "pw")
    }

    @Test("what the client cannot do yet is refused with a reason, not attempted")
    func unsupported() {
        #expect(throws: NetExtError.invalid("IKEv2: authenticationMethod is sharedSecret, but no shared secret is stored (SharedSecret in the profile)")) {
            try Self.plan(Self.pskSettings).authentication(hasSharedSecret: false, hasPassword: false)
        }
        for method in [IKEv2Protocol.AuthenticationMethod.certificate, .none] {
            var settings = Self.pskSettings
            settings.authenticationMethod = method
            #expect(throws: NetExtError.self) { try Self.plan(settings).authentication(hasSharedSecret: true, hasPassword: true) }
        }
    }

    @Test("charon's settings: netextd's table and rule priority, user-space ESP, files in its private /run, no secret")
    func daemonSettings() {
        let text = Self.plan(Self.pskSettings).daemonSettings
        #expect(text.contains("routing_table = 7163"))
        #expect(text.contains("routing_table_prio = 7354"))
        #expect(text.contains("kernel-libipsec"))
        #expect(text.contains("socket = unix:///run/charon.vici"))
        #expect(text.contains("file = /run/dns/resolv.conf"))
        #expect(!text.contains("vpn.example.test") && !text.contains("ref"))
        #expect(!text.contains("user ="), "no user named: charon stays root")
        let dropping = IKEv2ClientPlan(settings: Self.pskSettings, routingTable: 7163, rulePriority: 7354, user: "netext-ikev2", group: "netext-ikev2").daemonSettings
        #expect(dropping.contains("charon {\n  user = netext-ikev2\n  group = netext-ikev2\n  load = "))
    }

    @Test("a failed attempt is explained by the server's notify error, else by the last failure charon narrated")
    func failureReasons() {
        let refused = IKEv2ClientPlan.failureReason(
            narration: ["initiating IKE_SA netext[1] to 203.0.113.9", "received AUTHENTICATION_FAILED notify error", "establishing CHILD_SA 'netext' failed"],
            errorMessage: "establishing CHILD_SA 'netext' failed")
        #expect(refused == "establishing CHILD_SA 'netext' failed: the server refused the connection (received AUTHENTICATION_FAILED notify error)")
        let silent = IKEv2ClientPlan.failureReason(
            narration: ["sending packet: from 198.51.100.2[500] to 203.0.113.9[500]", "giving up after 3 retransmits"], errorMessage: nil)
        #expect(silent == "the connection could not be established: giving up after 3 retransmits")
        #expect(IKEv2ClientPlan.failureReason(narration: [], errorMessage: "timeout") == "timeout")
    }

    @Test("the SA state is read from a list-sa event; name servers from the resolve plugin's file")
    func saStateAndNameServers() throws {
        let event = VICIMessage([
            .section("netext", [
                .text("state", "ESTABLISHED"), .text("remote-host", "203.0.113.9"), .list("local-vips", ["10.77.0.1", "fd77::1"]),
                .section("child-sas", [
                    .section("netext-3", [
                        .text("name", "netext"), .text("state", "INSTALLED"), .text("bytes-in", "1200"), .text("bytes-out", "800"),
                        .list("remote-ts", ["0.0.0.0/0", "::/0"]),
                    ]),
                ]),
            ]),
        ])
        let state = try #require(IKEv2SAState(event: event))
        #expect(state.isUp)
        #expect(state.virtualAddresses == ["10.77.0.1", "fd77::1"])
        #expect(state.remoteTrafficSelectors == ["0.0.0.0/0", "::/0"])
        #expect(state.bytesIn == 1200 && state.bytesOut == 800)
        #expect(IKEv2SAState(event: VICIMessage([.section("other", [])])) == nil)
        let connecting = try #require(IKEv2SAState(event: VICIMessage([.section("netext", [.text("state", "CONNECTING")])])))
        #expect(!connecting.isUp)
        let servers = IKEv2ClientPlan.nameServers(inResolverFile: "nameserver 10.77.0.53   # by strongSwan\nnameserver fd77::53 # by strongSwan\nsearch x\nnameserver bogus\n")
        #expect(servers == ["10.77.0.53", "fd77::53"])
    }
}
