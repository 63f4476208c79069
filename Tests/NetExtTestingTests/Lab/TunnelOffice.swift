import Crypto
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import NetExtTesting
import NetExtTunnel
import TunnelProtocol

/// The office end of the reference tunnel in a lab: `netext-server tunnel` with one peer, the
/// pool 10.99.0.0/24, the route 10.20.0.0/16 and the name server 10.20.0.53 pushed to clients,
/// and the internal host 10.20.0.5 answering pings.
protocol TunnelOffice: Sendable {
    /// What a client configuration's serverAddress names.
    var serverAddress: String { get }
    var serverPublicKey: String { get }
    /// The one peer's private key (the configuration's password).
    var clientPrivateKey: String { get }
    func stop() async
}

enum TunnelOfficeSettings {
    static let bundle = "com.netext.tunnel"

    /// The server's configuration; without `pushesDNS` the laptop keeps its own resolver file.
    static func json(serverKey: String, clientPublicKey: String, listen: String, pushesDNS: Bool) -> String {
        #"{"privateKey": "\#(serverKey)", "listen": "\#(listen)", "ipv4Pool": "10.99.0.0/24", "routes": ["10.20.0.0/16"], "#
            + #""mtu": 1420, \#(pushesDNS ? #""dnsServers": ["10.20.0.53"], "# : "")"peers": [{"name": "laptop", "publicKey": "\#(clientPublicKey)"}]}"#
    }

    static func keys() -> (server: String, client: String, clientPublic: String) {
        let server = Curve25519.KeyAgreement.PrivateKey()
        let client = Curve25519.KeyAgreement.PrivateKey()
        return (server.rawRepresentation.base64EncodedString(), client.rawRepresentation.base64EncodedString(), TunnelKeys.base64(client.publicKey))
    }
}

/// The reference server in the test's process, on a loopback port of the kernel's choosing;
/// its interface is a packet socketpair whose other end an `EchoResponder` plays the office on.
final class InProcessTunnelOffice: TunnelOffice {
    let server: TunnelServer
    let office: EchoResponder
    let serverAddress: String
    let serverPublicKey: String
    let clientPrivateKey: String
    private let finished = DispatchSemaphore(value: 0)

    init(pushesDNS: Bool) async throws {
        let keys = TunnelOfficeSettings.keys()
        let json = TunnelOfficeSettings.json(serverKey: keys.server, clientPublicKey: keys.clientPublic, listen: "127.0.0.1:0", pushesDNS: pushesDNS)
        let configuration = try JSONDecoder().decode(TunnelServerConfiguration.self, from: Data(json.utf8))
        server = try TunnelServer(configuration: configuration, logger: Logger(label: "lab-server") { _ in SwiftLogNoOpLogHandler() })
        let (serverEnd, officeEnd) = try SocketPair.makePackets()
        office = EchoResponder(descriptor: officeEnd, addresses: ["10.20.0.5"])
        Thread.detachNewThread { [server, finished] in
            try? server.serve(interface: serverEnd, name: "labsrv0")
            finished.signal()
        }
        var address: SocketAddress?
        for _ in 0..<400 {
            address = server.listeningAddress
            if address != nil { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let address else { throw NetExtError.invalid("the in-process tunnel server did not start listening") }
        serverAddress = address.description
        serverPublicKey = server.publicKey
        clientPrivateKey = keys.client
    }

    func stop() async {
        server.stop()
        _ = await BlockingWork.run { [finished] in finished.wait(timeout: .now() + 5) }
        office.stop()
    }
}

/// `netext-server tunnel` as a process in the office namespace (203.0.113.2:51900); the office
/// itself holds 10.20.0.5.
final class NamespaceTunnelOffice: TunnelOffice {
    let lab: NamespaceLab
    let pid: Int32
    let serverAddress = "203.0.113.2:51900"
    let serverPublicKey: String
    let clientPrivateKey: String

    init(lab: NamespaceLab, binaryDirectory: String, pushesDNS: Bool) async throws {
        self.lab = lab
        let keys = TunnelOfficeSettings.keys()
        let path = lab.directory + "/server.json"
        let json = TunnelOfficeSettings.json(serverKey: keys.server, clientPublicKey: keys.clientPublic, listen: "0.0.0.0:51900", pushesDNS: pushesDNS)
        guard FileManager.default.createFile(atPath: path, contents: Data(json.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw NetExtError.readWrite("cannot write \(path)")
        }
        pid = try lab.spawn(in: .office, binaryDirectory + "/netext-server", ["tunnel", "--config", path], log: "server")
        serverPublicKey = TunnelKeys.base64(try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Data(base64Encoded: keys.server)!).publicKey)
        clientPrivateKey = keys.client
        let ready = await lab.eventually(timeout: .seconds(30)) { [lab] in lab.log("server").contains("tunnel server ready") }
        guard ready else { throw NetExtError.invalid("netext-server did not become ready; its log:\n\(lab.log("server"))") }
    }

    func stop() async { await lab.stop(pid) }
}
