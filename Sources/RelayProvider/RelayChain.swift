import Foundation
import MASQUERelay
import NetExtCore
import NIOSSL

/// The connection to a configuration's relays, made when the first flow needs it and again
/// when it has gone: the first relay reached by `maker` (HTTP/2 over TLS), each next one through
/// those before it. Each relay that asks for a Privacy Pass token is given a fresh one from
/// `tokens` on each new connection.
actor RelayChain {
    private let endpoints: [RelayEndpoint]
    private let maker: any RelayTransportMaker
    private var clients: [any RelayTransport] = []

    init(
        relays: [RelayHop], trustRoots: NIOSSLTrustRoots?, identities: [Int: RelayClientIdentity] = [:], tokens: (any RelayTokenSource)? = nil,
        maker: any RelayTransportMaker = HTTP2RelayTransportMaker()
    ) throws(NetExtError) {
        endpoints = try relays.enumerated().map { index, relay throws(NetExtError) in
            guard let text = relay.http2RelayURL else { throw NetExtError(.configurationInvalid, "a relay has no HTTP/2 URL") }
            let url = try RelayURL(parsing: text)
            return RelayEndpoint(
                host: url.host, port: url.port, trustRoots: trustRoots,
                additionalHeaders: relay.additionalHTTPHeaderFields.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) },
                udpPathTemplate: url.udpPathTemplate, pinnedPublicKeys: relay.rawPublicKeys.compactMap { Data(base64Encoded: $0).map { [UInt8]($0) } },
                identity: identities[index], tokens: tokens)
        }
        self.maker = maker
    }

    /// The last relay's connection, connecting (or connecting again) first where needed.
    func client() async throws -> any RelayTransport {
        if let last = clients.last, clients.allSatisfy(\.isConnected) { return last }
        await close()
        var built: [any RelayTransport] = []
        do {
            for endpoint in endpoints {
                if let previous = built.last {
                    built.append(try await previous.connect(through: endpoint))
                } else {
                    built.append(try await maker.connect(to: endpoint))
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
