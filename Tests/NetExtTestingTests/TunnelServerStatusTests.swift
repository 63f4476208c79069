import Crypto
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtTestSupport
import NetExtTunnel
import Testing
import TunnelProtocol
#if canImport(Glibc)
import Glibc
#endif

/// `netext-server tunnel show`: a server in this process on a loopback port, its status socket in
/// a temporary directory, a client played by a raw handshake.
@Suite("Tunnel server: status over the local socket")
struct TunnelServerStatusTests {
    let directory = NSTemporaryDirectory() + "netext-status-\(UUID().uuidString.prefix(8))"

    @Test("show lists every peer: the connected one with its endpoint, handshake and session, the silent one as never heard from")
    func showsPeers() async throws {
        let laptop = Curve25519.KeyAgreement.PrivateKey(), phone = Curve25519.KeyAgreement.PrivateKey()
        let configuration = try TunnelServerReloadTests.configuration(peers: [("laptop", laptop), ("phone", phone)])
        let server = try TunnelServer(configuration: configuration, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() })
        let path = directory + "/tunnel.sock"
        let statusSocket = try TunnelServerStatusSocket(path: path, server: server, logger: Logger(label: "t") { _ in SwiftLogNoOpLogHandler() })
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withCleanup(statusSocket, cleanup: { $0.close() }) { _ in
            try await TunnelServerReloadTests.serving(server, interface: "status0") { server, listening in
                let before = Date()
                guard let (_, _, socket) = try await TunnelServerReloadTests().handshake(laptop, server: listening, index: 21) else {
                    Issue.record("the configured peer got no answer"); return
                }
                defer { socket.close() }

                // Only the owner may connect to the socket file.
                var info = stat()
                #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
                let status = try await BlockingWork.run { Result { () throws(NetExtError) in try TunnelServerStatusSocket.read(path: path) } }.get()
                #expect(status.listen == listening.description && status.interface == "status0")
                #expect(status.publicKey == TunnelKeys.base64(TunnelServerReloadTests.serverKey.publicKey))
                let peers = Dictionary(uniqueKeysWithValues: status.peers.map { ($0.name, $0) })
                let seen = try #require(peers["laptop"])
                #expect(seen.endpoint == socket.localAddress?.description)
                #expect(seen.addresses == ["10.99.0.2/32"] && seen.hasSession)
                #expect(seen.publicKey == TunnelKeys.base64(laptop.publicKey))
                let handshake = try #require(seen.lastHandshake)
                #expect(handshake.timeIntervalSince(before) > -1 && handshake.timeIntervalSinceNow < 1)
                let silent = try #require(peers["phone"])
                #expect(silent.endpoint == nil && silent.lastHandshake == nil && !silent.hasSession && silent.bytesReceived == 0)

                let text = TunnelServerStatusText.render(status, now: handshake.addingTimeInterval(12))
                #expect(text.contains("peers: 2 configured, 1 with a session"))
                let laptopAt = try #require(text.range(of: "peer: laptop\n")), phoneAt = try #require(text.range(of: "peer: phone\n"))
                #expect(laptopAt.lowerBound < phoneAt.lowerBound, "the peer heard from most recently comes first")
                #expect(text.contains("  latest handshake: 12 seconds ago\n"))
                #expect(text.contains("  endpoint: (never heard from)\n"))

                // A second server cannot take the socket of a running one.
                #expect(throws: SystemError.self) { try UnixStreamListener(path: path) }
            }
        }
        #expect(!FileManager.default.fileExists(atPath: path), "closing removes the socket file")
    }

    @Test("the socket path: a stale socket file is taken over, a regular file is not; nothing listening is a sentence naming the path")
    func socketPath() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/stale.sock"
        // A socket file whose server died without removing it.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        #expect(bound == 0)
        close(fd)
        let listener = try UnixStreamListener(path: path)
        listener.close()
        #expect(!FileManager.default.fileExists(atPath: path))

        let file = directory + "/regular"
        try "not a socket".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: SystemError.self) { try UnixStreamListener(path: file) }
        #expect(FileManager.default.fileExists(atPath: file), "a file that is not a socket is never removed")

        do {
            _ = try TunnelServerStatusSocket.read(path: directory + "/absent.sock")
            Issue.record("reading an absent socket succeeded")
        } catch {
            #expect(error.message.hasPrefix("cannot reach a tunnel server's status socket at \(directory)/absent.sock (No such file or directory)"))
        }
        #expect(TunnelServerStatusSocket.defaultPath(port: 51900) == "/run/netext-server/tunnel-51900.sock")
    }
}
