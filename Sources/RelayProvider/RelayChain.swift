import Foundation
import MASQUERelay
import NetExtCore
import NIOSSL

/// The connection to a configuration's relays, made when the first flow needs it and again
/// when it has gone: the first relay reached directly, each next one through those before it.
actor RelayChain {
    private let relays: [RelayHop]
    private let trustRoots: NIOSSLTrustRoots?
    private var clients: [RelayClient] = []

    init(relays: [RelayHop], trustRoots: NIOSSLTrustRoots?) {
        self.relays = relays
        self.trustRoots = trustRoots
    }

    /// The last relay's client, connecting (or connecting again) first where needed.
    func client() async throws -> RelayClient {
        if let last = clients.last, clients.allSatisfy(\.isConnected) { return last }
        await close()
        var built: [RelayClient] = []
        do {
            for relay in relays {
                guard let text = relay.http2RelayURL else { throw NetExtError(.configurationInvalid, "a relay has no HTTP/2 URL") }
                let url = try RelayURL(parsing: text)
                let headers = relay.additionalHTTPHeaderFields.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
                let pins = relay.rawPublicKeys.compactMap { Data(base64Encoded: $0).map { [UInt8]($0) } }
                if let previous = built.last {
                    built.append(try await previous.connectThrough(
                        toHost: url.host, port: url.port, trustRoots: trustRoots, additionalHeaders: headers, udpPathTemplate: url.udpPathTemplate, pinnedPublicKeys: pins))
                } else {
                    built.append(try await RelayClient.connect(
                        host: url.host, port: url.port, trustRoots: trustRoots, additionalHeaders: headers, udpPathTemplate: url.udpPathTemplate, pinnedPublicKeys: pins))
                }
            }
        } catch {
            for client in built.reversed() { await client.close() }
            throw error
        }
        clients = built
        return built[built.count - 1]
    }

    /// Closes every connection of the chain, the last first.
    func close() async {
        for client in clients.reversed() { await client.close() }
        clients = []
    }
}
