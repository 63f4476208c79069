import Crypto
import Foundation
import Logging
import NetExtCore
import NetExtLinux
import Synchronization
import TunnelProtocol

/// `netext-server tunnel`: terminates the NetExt tunnel protocol for many clients, each with its
/// own static key and addresses from the pools, and forwards between them and the server's TUN
/// interface (and from there, with IP forwarding, the internal network).
public final class TunnelServer: Sendable {
    let configuration: TunnelServerConfiguration
    let logger: Logger
    let staticKey: Curve25519.KeyAgreement.PrivateKey
    let mac1Key: SymmetricKey
    let timing: TunnelTiming
    private let table = Mutex(ServerPeerTable())
    private let cookies: Mutex<CookieGenerator>
    private let running = Mutex(true)
    private let resources = Mutex<(socket: UDPSocket?, tun: Int32, interface: String)>((nil, -1, ""))

    public init(configuration: TunnelServerConfiguration, logger: Logger, timing: TunnelTiming = .standard) throws(NetExtError) {
        self.configuration = configuration
        self.logger = logger
        self.timing = timing
        do {
            staticKey = try TunnelKeys.privateKey(base64: try configuration.loadPrivateKey().text)
        } catch let error as NetExtError {
            throw error
        } catch {
            throw .invalid("the server's private key: \(error)")
        }
        mac1Key = MessageAuthentication.mac1Key(for: staticKey.publicKey)
        cookies = Mutex(CookieGenerator(responderPublicKey: staticKey.publicKey))
        var peers = ServerPeerTable()
        let routes = configuration.routes ?? [configuration.ipv4Pool, configuration.ipv6Pool].compactMap { $0 }
        for (index, peer) in configuration.peers.enumerated() {
            var addresses: [IPPrefix] = []
            if let pool = configuration.ipv4Pool, let address = TunnelServerConfiguration.host(index + 2, in: pool) { addresses.append(address) }
            if let pool = configuration.ipv6Pool, let address = TunnelServerConfiguration.host(index + 2, in: pool) { addresses.append(address) }
            let assignment = TunnelAssignment(
                addresses: addresses.map(\.description), includedRoutes: routes,
                dnsServers: configuration.dnsServers ?? [], searchDomains: configuration.searchDomains ?? [],
                matchDomains: configuration.matchDomains ?? [], mtu: configuration.mtu,
                httpProxy: configuration.httpProxy, httpsProxy: configuration.httpsProxy, proxyExceptions: configuration.proxyExceptions)
            let key = (try? TunnelKeys.publicKey(base64: peer.publicKey)).map { Array($0.rawRepresentation) } ?? []
            peers.add(.init(name: peer.name, publicKey: key, addresses: addresses, assignment: assignment))
        }
        table.withLock { $0 = peers }
    }

    /// The server's public key (base64), for clients' configurations.
    public var publicKey: String { TunnelKeys.base64(staticKey.publicKey) }

    /// Creates the TUN interface and the socket, then serves until `stop()`. Blocks.
    public func run() throws(NetExtError) {
        let tun: (fd: Int32, name: String)
        do { tun = try TunDevice.open(pattern: configuration.interfaceName ?? "netextsrv%d") } catch {
            throw NetExtError(.connectionFailed, "cannot create the server's TUN interface: \(error)")
        }
        try configureInterface(tun.name)
        guard let listen = SocketAddress(configuration.listen) else { throw .invalid("listen: '\(configuration.listen)'") }
        let socket: UDPSocket
        do { socket = try UDPSocket(bindingTo: listen) } catch {
            throw NetExtError(.connectionFailed, "cannot listen on \(configuration.listen): \(error)")
        }
        do { try socket.reportDestinationAddresses() } catch {
            logger.warning("cannot learn datagrams' destination addresses; on a host with several addresses, bind 'listen' to one", metadata: ["error": "\(error)"])
        }
        resources.withLock { $0 = (socket, tun.fd, tun.name) }
        logger.info("tunnel server ready", metadata: [
            "listen": "\(socket.localAddress?.description ?? configuration.listen)", "interface": "\(tun.name)",
            "peers": "\(configuration.peers.count)", "publicKey": "\(publicKey)",
        ])
        // Three threads: datagrams in, packets from the TUN interface out, timers.
        let done = DispatchGroup()
        for index in 0..<3 {
            done.enter()
            Thread.detachNewThread {
                switch index {
                case 0: self.receiveLoop(socket: socket, tun: tun.fd)
                case 1: self.tunLoop(socket: socket, tun: tun.fd)
                default: self.timerLoop(socket: socket)
                }
                done.leave()
            }
        }
        done.wait()
        close(tun.fd)
        logStatistics()
        logger.info("tunnel server stopped")
    }

    /// Stops serving; `run()` returns once its threads have ended.
    public func stop() {
        running.withLock { $0 = false }
        resources.withLock { $0.socket?.close() }
    }

    var isRunning: Bool { running.withLock { $0 } }

    private func configureInterface(_ name: String) throws(NetExtError) {
        var commands: [[String]] = []
        if let pool = configuration.ipv4Pool, let prefix = try? IPPrefix(pool), let server = TunnelServerConfiguration.host(1, in: pool) {
            commands.append(["-4", "address", "add", "\(server.addressText)/\(prefix.length)", "dev", name])
        }
        if let pool = configuration.ipv6Pool, let prefix = try? IPPrefix(pool), let server = TunnelServerConfiguration.host(1, in: pool) {
            commands.append(["-6", "address", "add", "\(server.addressText)/\(prefix.length)", "dev", name, "nodad"])
        }
        commands.append(["link", "set", "dev", name, "mtu", "\(configuration.mtu ?? 1420)", "up"])
        for command in commands {
            let result = CommandRunner.run(CommandRunner.ipPath, command)
            guard result.status == 0 else { throw NetExtError(.connectionFailed, "ip \(command.joined(separator: " ")): \(result.output)") }
        }
    }

    // MARK: Loops

    private func receiveLoop(socket: UDPSocket, tun: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while isRunning {
            let received: (count: Int, from: SocketAddress, to: LocalAddress?)?
            do { received = try buffer.withUnsafeMutableBytes { try socket.receiveWithDestination(into: $0) } } catch {
                if isRunning { logger.warning("receive failed", metadata: ["error": "\(error)"]) }
                continue
            }
            guard let (count, source, local) = received else { return }
            let datagram = Array(buffer[..<count])
            switch MessageType.of(datagram) {
            case .handshakeInitiation: handleInitiation(datagram, from: source, to: local, socket: socket)
            case .transportData: handleTransport(datagram, from: source, to: local, tun: tun)
            default: table.withLock { $0.drop("unknown message type") }
            }
        }
    }

    private func handleInitiation(_ message: [UInt8], from source: SocketAddress, to local: LocalAddress?, socket: UDPSocket) {
        do {
            try HandshakeResponder.precheck(message, mac1Key: mac1Key)
        } catch {
            table.withLock { $0.drop("initiation: \(error)") }
            return
        }
        let now = Date()
        let limit = configuration.handshakesPerSecondBeforeCookies ?? 200
        if table.withLock({ $0.isUnderLoad(now: now, limit: limit) }) {
            let valid = cookies.withLock { $0.hasValidMAC2(message, source: source.bytes, now: now) }
            if !valid {
                if let reply = try? cookies.withLock({ try $0.reply(to: message, receiverIndex: message.readBigEndianUInt32(at: 4), source: source.bytes, now: now) }) {
                    try? reply.withUnsafeBytes { try socket.send($0, to: source, from: local) }
                }
                table.withLock { $0.drop("initiation under load without cookie (cookie sent)") }
                return
            }
        }
        let received: HandshakeResponder.ReceivedInitiation
        do { received = try HandshakeResponder.consume(message, staticKey: staticKey) } catch {
            table.withLock { $0.drop("initiation: \(error)") }
            return
        }
        let key = Array(received.initiatorStaticKey.rawRepresentation)
        let outcome: Result<(response: [UInt8], peer: String), TunnelProtocolError> = table.withLock { table in
            guard let position = table.byKey[key] else { return .failure(.unknownPeer) }
            if let last = table.peers[position].lastTimestamp, received.timestamp <= last { return .failure(.replayedInitiation) }
            let index = table.newIndex()
            do throws(TunnelProtocolError) {
                let (response, session) = try received.respond(senderIndex: index, assignment: table.peers[position].assignment, timing: timing, now: now)
                table.peers[position].lastTimestamp = received.timestamp
                table.peers[position].endpoint = source
                table.peers[position].localAddress = local
                table.install(session, for: position, now: now)
                return .success((response, table.peers[position].name))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let (response, name)):
            try? response.withUnsafeBytes { try socket.send($0, to: source, from: local) }
            logger.info("handshake completed", metadata: ["peer": "\(name)", "endpoint": "\(source)"])
        case .failure(let error):
            table.withLock { $0.drop("initiation: \(error)") }
            if error == .unknownPeer { logger.notice("handshake from an unknown key refused", metadata: ["endpoint": "\(source)"]) }
        }
    }

    private func handleTransport(_ message: [UInt8], from source: SocketAddress, to local: LocalAddress?, tun: Int32) {
        guard message.count >= WireSize.transportMinimum else {
            table.withLock { $0.drop("transport: too short") }
            return
        }
        let index = message.readBigEndianUInt32(at: 4)
        let now = Date()
        let plaintext: [UInt8]? = table.withLock { table in
            guard let position = table.byIndex[index] else {
                table.drop("transport: unknown receiver index")
                return nil
            }
            var peer = table.peers[position]
            var opened: [UInt8]?
            if peer.current?.localIndex == index {
                opened = try? peer.current?.open(message, now: now)
            } else if peer.previous?.localIndex == index {
                opened = try? peer.previous?.open(message, now: now)
            }
            guard let packet = opened else {
                table.drop("transport: authentication or replay check failed")
                return nil
            }
            // Roaming: an authenticated packet from a new address moves the peer there.
            if peer.endpoint != source {
                logger.info("peer roamed", metadata: ["peer": "\(peer.name)", "from": "\(peer.endpoint?.description ?? "-")", "to": "\(source)"])
                peer.endpoint = source
            }
            peer.localAddress = local
            peer.lastReceived = now
            peer.bytesIn += UInt64(message.count)
            peer.packetsIn += 1
            table.peers[position] = peer
            if packet.isEmpty { return [] }
            guard let info = IPPacketInfo(packet) else {
                table.drop("transport: not an IP packet")
                return nil
            }
            // Anti-spoofing: a peer may only send from its own addresses.
            guard peer.addresses.contains(where: { $0.address == info.source }) else {
                table.drop("transport: source address not assigned to the peer")
                return nil
            }
            return Array(packet[..<info.length])
        }
        guard let plaintext, !plaintext.isEmpty else { return }
        try? plaintext.withUnsafeBytes { try PacketIO.write(tun, $0) }
    }

    private func tunLoop(socket: UDPSocket, tun: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while isRunning {
            guard PacketIO.waitReadable(tun, milliseconds: 250) else { continue }
            let count: Int
            do { count = try buffer.withUnsafeMutableBytes { try PacketIO.read(tun, into: $0) } } catch { continue }
            guard count > 0, let info = buffer.withUnsafeBytes({ IPPacketInfo(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else { continue }
            let packet = Array(buffer[..<info.length])
            let now = Date()
            let sealed: (message: [UInt8], endpoint: SocketAddress, local: LocalAddress?)? = table.withLock { table in
                guard let position = table.byAddress[info.destination], let endpoint = table.peers[position].endpoint,
                      var session = table.peers[position].current else {
                    table.drop("tun: no peer or session for the destination")
                    return nil
                }
                guard let message = try? session.seal(packet, now: now) else {
                    table.drop("tun: session expired")
                    return nil
                }
                table.peers[position].current = session
                table.peers[position].lastSent = now
                table.peers[position].bytesOut += UInt64(message.count)
                table.peers[position].packetsOut += 1
                return (message, endpoint, table.peers[position].localAddress)
            }
            if let sealed { try? sealed.message.withUnsafeBytes { try socket.send($0, to: sealed.endpoint, from: sealed.local) } }
        }
    }

    private func timerLoop(socket: UDPSocket) {
        var lastStatistics = Date()
        while isRunning {
            Thread.sleep(forTimeInterval: 0.5)
            let now = Date()
            let keepalives: [([UInt8], SocketAddress, LocalAddress?)] = table.withLock { table in
                var messages: [([UInt8], SocketAddress, LocalAddress?)] = []
                for position in table.peers.indices {
                    var peer = table.peers[position]
                    if let current = peer.current, current.isExpired(now: now) {
                        table.byIndex[current.localIndex] = nil
                        peer.current = nil
                    }
                    if let previous = peer.previous, previous.isExpired(now: now) {
                        table.byIndex[previous.localIndex] = nil
                        peer.previous = nil
                    }
                    // Passive keepalive: we heard from the peer but have not sent since.
                    if var session = peer.current, let endpoint = peer.endpoint,
                       peer.lastReceived > peer.lastSent, now.timeIntervalSince(peer.lastSent) >= timing.keepaliveTimeout,
                       now.timeIntervalSince(peer.lastReceived) >= timing.keepaliveTimeout,
                       let message = try? session.seal([], now: now) {
                        peer.current = session
                        peer.lastSent = now
                        messages.append((message, endpoint, peer.localAddress))
                    }
                    table.peers[position] = peer
                }
                return messages
            }
            for (message, endpoint, local) in keepalives { try? message.withUnsafeBytes { try socket.send($0, to: endpoint, from: local) } }
            if now.timeIntervalSince(lastStatistics) >= 30 {
                logStatistics()
                lastStatistics = now
            }
        }
    }

    /// Per-client statistics, without keys or payloads.
    public func statistics() -> [String: String] {
        table.withLock { table in
            var result: [String: String] = [:]
            for peer in table.peers {
                result[peer.name] = "endpoint=\(peer.endpoint?.description ?? "-") handshake=\(peer.lastHandshake.map { ISO8601DateFormatter().string(from: $0) } ?? "never") rx=\(peer.bytesIn)B/\(peer.packetsIn)p tx=\(peer.bytesOut)B/\(peer.packetsOut)p"
            }
            for (reason, count) in table.dropped { result["dropped: \(reason)"] = "\(count)" }
            return result
        }
    }

    private func logStatistics() {
        for (key, value) in statistics().sorted(by: { $0.key < $1.key }) {
            logger.info("statistics", metadata: ["item": "\(key)", "value": "\(value)"])
        }
    }
}
