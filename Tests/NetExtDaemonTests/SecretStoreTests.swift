import Foundation
import NetExtCore
import NetExtLinux
import Testing
@testable import NetExtDaemon

@Suite("Secret store and authorization")
struct SecretStoreTests {
    @Test("secrets are files of mode 0600 in a 0700 directory, readable by reference")
    func modes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("netext-secrets-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SecretStore(directory: directory)
        let reference = try store.store("hunter2")
        #expect(try store.secret(for: reference) == "hunter2")
        let fileMode = try FileManager.default.attributesOfItem(atPath: directory + "/" + reference)[.posixPermissions] as? Int
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        #expect(fileMode == 0o600)
        #expect(directoryMode == 0o700)
        #expect(throws: NetExtError.self) { try store.secret(for: "../etc/passwd") }
        let orphan = try store.store("orphan")
        #expect(store.collectGarbage(keeping: [reference]) == 1)
        #expect(try store.secret(for: orphan) == nil)
        #expect(try store.secret(for: reference) == "hunter2")
    }

    @Test("apps see only their own configurations; root sees all; the admin group may modify")
    func authorization() {
        let credentials = PeerCredentials(pid: 1, uid: 1000, gid: 1000, groups: [27, 4242])
        let member = ClientIdentity(credentials: credentials, appIdentifier: "app.a", adminGroupID: 4242)
        let outsider = ClientIdentity(credentials: credentials, appIdentifier: "app.a", adminGroupID: 9999)
        let root = ClientIdentity(credentials: PeerCredentials(pid: 1, uid: 0, gid: 0, groups: []), appIdentifier: "x", adminGroupID: nil)
        #expect(member.mayModify && !outsider.mayModify && root.mayModify)
        let mine = tunnelConfiguration("Mine", owner: Owner(uid: 1000, appIdentifier: "app.a"))
        let otherApp = tunnelConfiguration("Other app", owner: Owner(uid: 1000, appIdentifier: "app.b"))
        let otherUser = tunnelConfiguration("Other user", owner: Owner(uid: 1001, appIdentifier: "app.a"))
        #expect(member.canSee(mine) && !member.canSee(otherApp) && !member.canSee(otherUser))
        #expect(root.canSee(mine) && root.canSee(otherApp) && root.canSee(otherUser))
    }
}
