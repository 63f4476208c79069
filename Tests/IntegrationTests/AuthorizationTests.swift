import Foundation
import Testing

@Suite("Authorization by peer credentials", .enabled(if: isRoot, "needs root: runs the CLI as other users"))
struct AuthorizationTests {
    @Test("a user outside the admin group is refused changes before any lookup, and list, show and status agree on what it sees")
    func outsiderRefused() async throws {
        let daemon = try DaemonHarness(adminGroup: "4242")
        defer { daemon.tearDown() }
        try await daemon.start()
        #expect(try await daemon.cli(["create", "--name", "Root VPN", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--enable"]).status == 0)

        // Root's configuration is not nobody's: status, list and show all leave it out.
        let status = try await daemon.cli(["status"], as: .nobody)
        #expect(status.status == 0, "\(status)")
        #expect(status.stdout.contains("No configurations") && !status.stdout.contains("Root VPN"), "\(status)")
        #expect(try await daemon.cli(["status", "Root VPN"], as: .nobody).status == 8)
        #expect(try await daemon.cli(["show", "Root VPN"], as: .nobody).status == 8)
        // Changes are refused as changes (permission), whether the name exists or not.
        for command in [["disable", "Root VPN"], ["enable", "No Such VPN"], ["remove", "Root VPN"], ["on-demand", "Root VPN", "off"]] {
            let refused = try await daemon.cli(command, as: .nobody)
            #expect(refused.status == 10 && refused.stderr.contains("needs root or membership of netextd's admin group"), "\(command): \(refused)")
        }

        let create = try await daemon.cli(["create", "--name", "Mine", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test"], as: .nobody)
        #expect(create.status == 10, "\(create)")
        #expect(create.stderr.contains("needs root or membership of netextd's admin group"))
        #expect(create.stderr.contains("[permissionDenied]"))

        // List is empty too; a start is refused
        // before its name is looked up (the same answer whether the name exists or not).
        #expect(try await daemon.cli(["list"], as: .nobody).stdout.contains("No configurations"))
        let start = try await daemon.cli(["start", "Root VPN"], as: .nobody)
        #expect(start.status == 10, "\(start)")
        let startUnknown = try await daemon.cli(["start", "No Such VPN"], as: .nobody)
        #expect(startUnknown.status == 10 && startUnknown.stderr.contains("startConnection needs root"), "\(startUnknown)")
        let install = try await daemon.cli(["profile", "install", fixturesDirectory + "/profiles/enterprise-vpn.mobileconfig"], as: .nobody)
        #expect(install.status == 10, "\(install)")
    }

    @Test("a member of the admin group manages its own configurations, not root's")
    func memberAllowed() async throws {
        let daemon = try DaemonHarness(adminGroup: "4242")
        defer { daemon.tearDown() }
        try await daemon.start()
        #expect(try await daemon.cli(["create", "--name", "Root VPN", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test"]).status == 0)
        let member = RunAs(uid: 65534, gid: 65534, groups: [4242])
        let create = try await daemon.cli(["create", "--name", "Member VPN", "--provider", DaemonHarness.testProviderBundle, "--server", "vpn.test", "--enable"], as: member)
        #expect(create.status == 0, "\(create)")
        let started = try await daemon.cli(["start", "Member VPN"], as: member)
        #expect(started.status == 0, "\(started)\n\(daemon.log())")
        #expect(try await daemon.cli(["stop", "Member VPN"], as: member).status == 0)
        let list = try await daemon.cli(["list"], as: member)
        #expect(list.stdout.contains("Member VPN") && !list.stdout.contains("Root VPN"))
        #expect(try await daemon.cli(["remove", "Root VPN"], as: member).status == 8)
        // Another app of the same user sees nothing of this app's.
        let otherApp = try await daemon.cli(["list", "--app", "com.example.other"], as: member)
        #expect(otherApp.stdout.contains("No configurations"), "\(otherApp)")
        #expect(try await daemon.cli(["remove", "Member VPN", "--app", "com.example.other"], as: member).status == 8)
        // Root sees both.
        let rootList = try await daemon.cli(["list"])
        #expect(rootList.stdout.contains("Member VPN") && rootList.stdout.contains("Root VPN"))
    }
}
