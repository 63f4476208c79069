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
    let table = Mutex(ServerPeerTable())
    private let handshakes = HandshakeQueue()
    /// Cookies, load and per-source limits (the handshake thread's).
    private let admission: Mutex<HandshakeAdmission>
    private let running = Mutex(true)
    /// When the server was made (its uptime in `status()`).
    let startedAt = Date()
    let resources = Mutex<(socket: UDPSocket?, tun: Int32, interface: String)>((nil, -1, ""))
    /// What the handshake thread records as it goes; the rest is collected from `status()`.
    public let metrics: TunnelServerMetrics

    public init(
        configuration: TunnelServerConfiguration, logger: Logger, timing: TunnelTiming = .standard, metrics: TunnelServerMetrics = TunnelServerMetrics()
    ) throws(NetExtError) {
        self.configuration = configuration
        self.logger = logger
        self.timing = timing
        self.metrics = metrics
        do {
            staticKey = try TunnelKeys.privateKey(base64: try configuration.loadPrivateKey().text)
        } catch let error as NetExtError {
            throw error
        } catch {
            throw .invalid("the server's private key: \(error)")
        }
        mac1Key = MessageAuthentication.mac1Key(for: staticKey.publicKey)
        admission = Mutex(HandshakeAdmission(
            cookies: CookieGenerator(responderPublicKey: staticKey.publicKey),
            load: HandshakeLoad(limit: configuration.handshakesPerSecondBeforeCookies ?? 200)))
        let peers = ServerPeerTable(configuration: configuration)
        table.withLock { $0 = peers }
    }

    /// The server's public key (base64), for clients' configurations.
    public var publicKey: String { TunnelKeys.base64(staticKey.publicKey) }

    /// Creates the TUN interface, addresses it and sets up forwarding, then serves until
    /// `stop()`. Blocks.
    public func run() throws(NetExtError) {
        let tun: (fd: Int32, name: String, offload: Bool)
        do { tun = try TunDevice.open(pattern: configuration.interfaceName ?? "netextsrv%d") } catch {
            throw NetExtError(.connectionFailed, "cannot create the server's TUN interface: \(error)")
        }
        var forwarding = ServerForwarding(configuration: configuration, interface: tun.name)
        do {
            try configureInterface(tun.name)
            try forwarding.apply(logger: logger)
        } catch {
            forwarding.remove()
            close(tun.fd)
            throw error
        }
        defer { forwarding.remove() }
        try serve(interface: tun.fd, name: tun.name, offload: tun.offload)
    }

    /// Serves over an interface descriptor the caller opened, until `stop()`; blocks, and closes
    /// the descriptor at the end. `run()` passes its TUN device; a test passes one end of a
    /// packet socketpair (`SocketPair.makePackets()`) and plays the networks behind the server on
    /// the other end: each datagram is one IP packet, no offloads. Nothing of the host is
    /// changed here (no address, route, forwarding or nftables).
    public func serve(interface fd: Int32, name: String, offload: Bool = false) throws(NetExtError) {
        guard let listen = SocketAddress(configuration.listen) else {
            close(fd)
            throw .invalid("listen: '\(configuration.listen)'")
        }
        let socket: UDPSocket
        do { socket = try UDPSocket(bindingTo: listen) } catch {
            close(fd)
            throw NetExtError(.connectionFailed, "cannot listen on \(configuration.listen): \(error)")
        }
        do { try socket.reportDestinationAddresses() } catch {
            logger.warning("cannot learn datagrams' destination addresses; on a host with several addresses, bind 'listen' to one", metadata: ["error": "\(error)"])
        }
        let tun = (fd: fd, name: name, offload: offload)
        resources.withLock { $0 = (socket, tun.fd, tun.name) }
        logger.info("tunnel server ready", metadata: [
            "listen": "\(socket.localAddress?.description ?? configuration.listen)", "interface": "\(tun.name)",
            "peers": "\(configuration.peers.count)", "publicKey": "\(publicKey)", "offloads": "\(tun.offload)",
        ])
        // Four threads: datagrams in, packets from the TUN interface out, timers, and handshakes
        // (off the data path, from a bounded queue). One handshake thread, not one a core as in
        // WireGuard: under a flood on two cores a second one took the data path's share
        // (33 % ping loss against 0–8 % with one, in scripts/e2e/handshake-flood.sh beside
        // twelve busy loops).
        let done = DispatchGroup()
        for index in 0..<4 {
            done.enter()
            Thread.detachNewThread {
                switch index {
                case 0: self.receiveLoop(socket: socket, tun: tun.fd)
                case 1: self.tunLoop(socket: socket, tun: tun.fd)
                case 2: self.timerLoop(socket: socket)
                default: self.handshakeLoop(socket: socket)
                }
                done.leave()
            }
        }
        done.wait()
        close(tun.fd)
        logStatistics()
        logger.info("tunnel server stopped")
    }

    /// The address the server listens on once serving (with the port the kernel chose when
    /// `listen` names port 0); nil before.
    public var listeningAddress: SocketAddress? { resources.withLock { $0.socket?.localAddress } }

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

    /// One transport message of a received batch, opened in place.
    /// What the receive loop needs of a session, looked up once per batch and index.
    private struct ReceiveKey {
        var position: Int
        var cipher: TransportCipher
        /// The peer's own addresses (4 or 16 bytes each), for anti-spoofing.
        var addresses: [[UInt8]]
    }

    /// UDP → TUN: a batch per recvmmsg (with UDP GRO), each transport message opened in place
    /// outside the lock, counters, roaming and statistics under the lock once per batch, then the
    /// packets written with TCP segments joined.
    private func receiveLoop(socket: UDPSocket, tun: Int32) {
        let receiver = DatagramReceiver(socket: socket)
        let writer = TunPacketWriter(fileDescriptor: tun)
        // What the kernel answers at once to the packets just written (TCP ACKs, echo replies)
        // is already queued when the write returns: send it from here instead of waking the TUN
        // thread.
        let replies = TunPacketReader(fileDescriptor: tun)
        let replyBatch = PacketBatch(
            capacity: 128, maximumPacket: max(configuration.mtu ?? 1420, 1280), headroom: WireSize.transportHeader,
            tailroom: TransportSession.paddingMultiple + WireSize.tag)
        let replySender = DatagramSender(socket: socket, capacity: 128)
        var replyPlan: [Outgoing?] = Array(repeating: nil, count: replyBatch.capacity)
        var opened: [OpenedTransportMessage] = []
        opened.reserveCapacity(1024)
        var keys: [UInt32: ReceiveKey] = [:]
        var sources: [SocketAddress?] = Array(repeating: nil, count: receiver.capacity)
        while isRunning {
            let filled: Int
            do {
                guard let count = try receiver.receive() else { return }
                filled = count
            } catch {
                if isRunning { logger.warning("receive failed", metadata: ["error": "\(error)"]) }
                continue
            }
            guard filled > 0 else { continue }
            let now = Date()
            opened.removeAll(keepingCapacity: true)
            keys.removeAll(keepingCapacity: true)
            var rejected: UInt64 = 0
            var initiationDrops: (malformed: UInt64, badMAC1: UInt64, queueFull: UInt64, unknown: UInt64) = (0, 0, 0, 0)
            for bufferIndex in 0..<filled { sources[bufferIndex] = receiver.source(bufferIndex) }
            receiver.forEachDatagram(in: filled) { bufferIndex, datagram in
                guard let source = sources[bufferIndex] else { return }
                switch MessageType.of(UnsafeRawBufferPointer(datagram)) {
                case .transportData:
                    let message = TransportReceiveStep.open(datagram, buffer: bufferIndex) { index in
                        if keys[index] == nil, let key = receiveKey(for: index) { keys[index] = key }
                        return keys[index].map { ($0.cipher, $0.position) }
                    }
                    guard let message else {
                        rejected += 1
                        return
                    }
                    opened.append(message)
                case .handshakeInitiation:
                    // Only the cheap check here (one HMAC); the Diffie-Hellman waits its turn on
                    // the handshake thread so that a flood of initiations cannot starve data.
                    let message = Array(datagram)
                    do throws(TunnelProtocolError) {
                        try HandshakeResponder.precheck(message, mac1Key: mac1Key)
                    } catch {
                        if error == .badMAC1 { initiationDrops.badMAC1 += 1 } else { initiationDrops.malformed += 1 }
                        return
                    }
                    let item = HandshakeQueue.Item(message: message, source: source, local: receiver.destination(bufferIndex))
                    if !handshakes.push(item, carriesCookie: MessageAuthentication.carriesMAC2(message)) {
                        initiationDrops.queueFull += 1
                    }
                default:
                    initiationDrops.unknown += 1
                }
            }
            table.withLock { table in
                table.drop(.transportRejected, count: rejected)
                table.drop(.initiationMalformed, count: initiationDrops.malformed)
                table.drop(.initiationBadMAC1, count: initiationDrops.badMAC1)
                table.drop(.initiationQueueFull, count: initiationDrops.queueFull)
                table.drop(.unknownMessageType, count: initiationDrops.unknown)
                var replayed: UInt64 = 0
                for item in opened.indices {
                    let position = opened[item].peer
                    let accepted = TransportReceiveStep.acceptCounter(of: opened[item], in: &table.peers[position], now: now)
                    guard accepted else {
                        replayed += 1
                        continue
                    }
                    opened[item].accepted = true
                    // Roaming: an authenticated packet from a new address moves the peer there.
                    let source = sources[opened[item].buffer]
                    if table.peers[position].endpoint != source {
                        logger.info("peer roamed", metadata: [
                            "peer": "\(table.peers[position].name)", "from": "\(table.peers[position].endpoint?.description ?? "-")",
                            "to": "\(source?.description ?? "-")",
                        ])
                        table.peers[position].endpoint = source
                    }
                    table.peers[position].localAddress = receiver.destination(opened[item].buffer)
                    table.peers[position].lastReceived = now
                    if opened[item].packet.count > 0, table.peers[position].keepaliveDue == nil { table.peers[position].keepaliveDue = now }
                    table.peers[position].bytesIn += UInt64(opened[item].messageLength)
                    table.peers[position].packetsIn += 1
                }
                table.drop(.transportReplayed, count: replayed)
            }
            // Anti-spoofing: a peer may only send from its own addresses.
            let written = TransportReceiveStep.write(opened, to: writer) { packet, message in
                let layout = IPPacketInfo.addressLayout(of: packet)
                return keys[message.index]?.addresses.contains { address in
                    address.count == layout.count && address.withUnsafeBytes { memcmp($0.baseAddress!, packet.baseAddress! + layout.offset, layout.count) == 0 }
                } ?? false
            }
            let notIP = UInt64(written.notIP)
            let spoofed = UInt64(written.refused)
            replyBatch.removeAll()
            if let count = try? replies.fill(replyBatch, waitMilliseconds: 0), count > 0 {
                routeAndSend(replyBatch, count: count, sender: replySender, plan: &replyPlan)
            }
            let refused = UInt64(writer.takeDropped())
            let unreadable = UInt64(replies.takeDropped())
            if notIP > 0 || spoofed > 0 || refused > 0 || unreadable > 0 {
                table.withLock { table in
                    table.drop(.transportNotIP, count: notIP)
                    table.drop(.transportSpoofed, count: spoofed)
                    table.drop(.tunWriteRefused, count: refused)
                    table.drop(.tunUnreadable, count: unreadable)
                }
            }
        }
    }

    private func receiveKey(for index: UInt32) -> ReceiveKey? {
        table.withLock { table in
            guard let position = table.byIndex[index] else { return nil }
            let peer = table.peers[position]
            let session = peer.current?.localIndex == index ? peer.current : peer.previous?.localIndex == index ? peer.previous : nil
            guard let session else { return nil }
            return ReceiveKey(position: position, cipher: session.receiveCipher, addresses: peer.addresses.map(\.address))
        }
    }

    /// What admission keeps between initiations, under its lock only for the bookkeeping:
    /// cookies' secrets, the load estimate, the per-source limits, the unknown-key log's pacing.
    struct HandshakeAdmission {
        var cookies: CookieGenerator
        var load: HandshakeLoad
        var limiter = InitiationRateLimiter()
        var lastUnknownPeerLog = Date.distantPast
        var unknownPeersSinceLog = 0
    }

    /// Handshakes from the bounded queue, so their cost (four X25519 operations each) is paid off
    /// the data path.
    private func handshakeLoop(socket: UDPSocket) {
        while isRunning {
            guard let item = handshakes.pop(waitMilliseconds: 250) else { continue }
            handleInitiation(item, socket: socket)
        }
    }

    /// Under load (cookies required): no valid mac2 → a cookie reply; a valid mac2 over the
    /// source's rate → dropped. Then the Diffie-Hellman, the peer's replay check and the response.
    /// The lock covers only the bookkeeping; MACs, the reply's encryption and the Diffie-Hellman
    /// run outside it.
    private func handleInitiation(_ item: HandshakeQueue.Item, socket: UDPSocket) {
        let (message, source, local) = (item.message, item.source, item.local)
        let now = Date()
        let started = DispatchTime.now().uptimeNanoseconds
        let queued = handshakes.count
        let secrets: CookieGenerator.Secrets? = admission.withLock { admission in
            admission.load.record(now: now, queued: queued, queueCapacity: handshakes.capacity) ? admission.cookies.secrets(now: now) : nil
        }
        if let secrets {
            guard secrets.hasValidMAC2(message, source: source.bytes) else {
                if let reply = try? secrets.reply(to: message, receiverIndex: message.readBigEndianUInt32(at: 4), source: source.bytes) {
                    try? reply.withUnsafeBytes { try socket.send($0, to: source, from: local) }
                    metrics.cookieReplies.increment()
                }
                table.withLock { $0.drop(.initiationCookieSent) }
                return
            }
            guard let key = InitiationRateLimiter.Source(address: source.address), admission.withLock({ $0.limiter.allow(key, now: now) }) else {
                table.withLock { $0.drop(.initiationRateLimited) }
                return
            }
        }
        let received: HandshakeResponder.ReceivedInitiation
        do { received = try HandshakeResponder.consume(message, staticKey: staticKey, mac1Key: mac1Key) } catch {
            table.withLock { $0.drop(.initiation(error)) }
            return
        }
        let key = Array(received.initiatorStaticKey.rawRepresentation)
        let outcome: Result<(response: [UInt8], peer: String, returning: Bool), TunnelProtocolError> = table.withLock { table in
            guard let position = table.byKey[key] else { return .failure(.unknownPeer) }
            if let last = table.peers[position].lastTimestamp, received.timestamp <= last { return .failure(.replayedInitiation) }
            let index = table.newIndex()
            do throws(TunnelProtocolError) {
                let (response, session) = try received.respond(senderIndex: index, assignment: table.peers[position].assignment, timing: timing, now: now)
                // A peer with a live session is rekeying; one without is (re)connecting.
                let returning = table.peers[position].current == nil
                table.peers[position].lastTimestamp = received.timestamp
                table.peers[position].endpoint = source
                table.peers[position].localAddress = local
                table.install(session, for: position, now: now)
                return .success((response, table.peers[position].name, returning))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let (response, name, returning)):
            // Recorded before the answer leaves, so whoever sees the answer sees it counted (a
            // test read the histogram before the thread got back to it on a loaded machine).
            metrics.handshakeDuration.recordNanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds - started))
            try? response.withUnsafeBytes { try socket.send($0, to: source, from: local) }
            // A peer connecting is news; its rekey every two minutes is routine.
            logger.log(level: returning ? .info : .debug, returning ? "peer connected" : "handshake completed (rekey)", metadata: ["peer": "\(name)", "endpoint": "\(source)"])
        case .failure(let error):
            table.withLock { $0.drop(.initiation(error)) }
            guard error == .unknownPeer else { break }
            // At most one line per 10 s: anyone who knows our public key can make these.
            let refusedSinceLastLine: Int? = admission.withLock { admission in
                admission.unknownPeersSinceLog += 1
                guard now.timeIntervalSince(admission.lastUnknownPeerLog) >= 10 else { return nil }
                defer {
                    admission.lastUnknownPeerLog = now
                    admission.unknownPeersSinceLog = 0
                }
                return admission.unknownPeersSinceLog
            }
            if let refusedSinceLastLine {
                logger.notice("handshake from an unknown key refused", metadata: [
                    "endpoint": "\(source)", "refusedSinceLastLine": "\(refusedSinceLastLine)",
                ])
            }
        }
    }

    /// Where one packet from the TUN interface goes, decided under the lock.
    private struct Outgoing {
        var position: Int
        var counter: UInt64
        var cipher: TransportCipher
        var receiver: UInt32
        var endpoint: SocketAddress
        var local: LocalAddress?
    }

    /// TUN → UDP: a batch of packets (TCP super-packets split), each routed to its peer by
    /// destination address and given a counter under the lock once per batch, sealed in place
    /// outside it, and sent with sendmmsg / UDP GSO, one run per peer.
    private func tunLoop(socket: UDPSocket, tun: Int32) {
        let reader = TunPacketReader(fileDescriptor: tun)
        let batch = PacketBatch(
            capacity: 192, maximumPacket: max(configuration.mtu ?? 1420, 1280), headroom: WireSize.transportHeader,
            tailroom: TransportSession.paddingMultiple + WireSize.tag)
        let sender = DatagramSender(socket: socket, capacity: 192)
        var plan: [Outgoing?] = Array(repeating: nil, count: batch.capacity)
        while isRunning {
            batch.removeAll()
            let count: Int
            do { count = try reader.fill(batch, waitMilliseconds: 250) } catch {
                if isRunning { logger.error("reading the TUN interface failed", metadata: ["error": "\(error)"]) }
                return
            }
            let unreadable = UInt64(reader.takeDropped())
            if unreadable > 0 { table.withLock { $0.drop(.tunUnreadable, count: unreadable) } }
            guard count > 0 else { continue }
            routeAndSend(batch, count: count, sender: sender, plan: &plan)
        }
    }

    /// Routes a batch read from the TUN interface to its peers (counters under the lock once),
    /// seals each packet in place and sends the batch.
    private func routeAndSend(_ batch: PacketBatch, count: Int, sender: DatagramSender, plan: inout [Outgoing?]) {
        let now = Date()
        table.withLock { table in
            var lastDestination: [UInt8] = []
            var lastPosition: Int?
            var unrouted: UInt64 = 0
            for index in 0..<count {
                plan[index] = nil
                let packet = UnsafeRawBufferPointer(batch.packet(index))
                guard IPPacketInfo.length(of: packet) != nil else {
                    unrouted += 1
                    continue
                }
                let layout = IPPacketInfo.addressLayout(of: packet)
                let destination = packet.baseAddress! + layout.offset + layout.count
                // Segments of one super-packet share their destination: look it up once.
                let same = lastDestination.count == layout.count && lastDestination.withUnsafeBytes { memcmp($0.baseAddress!, destination, layout.count) == 0 }
                if !same {
                    lastDestination = Array(UnsafeRawBufferPointer(start: destination, count: layout.count))
                    lastPosition = table.byAddress[lastDestination]
                }
                guard let position = lastPosition, let endpoint = table.peers[position].endpoint,
                      var session = table.peers[position].current, let counter = try? session.reserveCounters(1, now: now) else {
                    unrouted += 1
                    continue
                }
                table.peers[position].current = session
                table.peers[position].lastSent = now
                table.peers[position].keepaliveDue = nil
                table.peers[position].bytesOut += UInt64(TransportCipher.messageLength(packetLength: batch.length(index)))
                table.peers[position].packetsOut += 1
                plan[index] = Outgoing(
                    position: position, counter: counter, cipher: session.sendCipher, receiver: session.remoteIndex,
                    endpoint: endpoint, local: table.peers[position].localAddress)
            }
            table.drop(.tunUnrouted, count: unrouted)
        }
        for index in 0..<count {
            guard let outgoing = plan[index] else { continue }
            let slot = batch.slot(index)
            let length = outgoing.cipher.seal(packetLength: batch.length(index), in: slot, receiverIndex: outgoing.receiver, counter: outgoing.counter)
            sender.add(UnsafeRawBufferPointer(rebasing: slot[..<length]), key: outgoing.position, to: outgoing.endpoint, from: outgoing.local)
        }
        sender.flush()
        let unsent = UInt64(sender.takeDropped())
        if unsent > 0 { table.withLock { $0.drop(.udpSendRefused, count: unsent) } }
    }

    private func timerLoop(socket: UDPSocket) {
        var lastStatistics = Date()
        var logged: [String: String] = [:]
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
                    // Passive keepalive: data came from the peer `keepaliveTimeout` ago and
                    // nothing has been sent to it since.
                    if var session = peer.current, let endpoint = peer.endpoint,
                       let due = peer.keepaliveDue, now.timeIntervalSince(due) >= timing.keepaliveTimeout,
                       let message = try? session.seal([], now: now) {
                        peer.current = session
                        peer.lastSent = now
                        peer.keepaliveDue = nil
                        messages.append((message, endpoint, peer.localAddress))
                    }
                    table.peers[position] = peer
                }
                return messages
            }
            for (message, endpoint, local) in keepalives { try? message.withUnsafeBytes { try socket.send($0, to: endpoint, from: local) } }
            if now.timeIntervalSince(lastStatistics) >= 30 {
                logged = logStatistics(changedSince: logged)
                lastStatistics = now
            }
        }
    }

    /// Per-client statistics as log lines (`status()` summarised), without keys or payloads.
    public func statistics() -> [String: String] {
        let status = status()
        var result: [String: String] = [:]
        for peer in status.peers {
            result[peer.name] = "endpoint=\(peer.endpoint ?? "-") handshake=\(peer.lastHandshake.map { $0.formatted(.iso8601) } ?? "never") rx=\(peer.bytesReceived)B/\(peer.packetsReceived)p tx=\(peer.bytesSent)B/\(peer.packetsSent)p"
        }
        for (reason, count) in status.dropped { result["dropped: \(reason)"] = "\(count)" }
        return result
    }

    /// Logs the statistics that changed since `previous` (all of them when it is empty) and
    /// returns what was logged, so an idle server does not repeat the same lines every 30 s.
    @discardableResult
    private func logStatistics(changedSince previous: [String: String] = [:]) -> [String: String] {
        let current = statistics()
        for (key, value) in current.sorted(by: { $0.key < $1.key }) where previous[key] != value {
            logger.info("statistics", metadata: ["item": "\(key)", "value": "\(value)"])
        }
        return current
    }
}

extension TunnelServer {
    /// Applies a changed configuration file without a restart, as `wg syncconf` does: peers
    /// added, removed or changed; every other peer keeps its session, endpoint and counters and
    /// notices nothing. Only the peer list may change live — the listen address, pools, routes,
    /// pushed settings and key need a restart, and a file changing them is refused whole
    /// (naming what changed), the running server untouched.
    public func reload(_ new: TunnelServerConfiguration) throws(NetExtError) -> PeerReload {
        var sameApartFromPeers = new
        sameApartFromPeers.peers = configuration.peers
        let changed = configuration.keysDiffering(from: sameApartFromPeers)
        guard changed.isEmpty else {
            throw .invalid("\(changed.joined(separator: ", ")) changed; only 'peers' can change without a restart (the running server keeps its configuration)")
        }
        let newKey = try new.loadPrivateKey().text
        guard (try? TunnelKeys.privateKey(base64: newKey))?.rawRepresentation == staticKey.rawRepresentation else {
            throw .invalid("the private key changed; that needs a restart (the running server keeps its key)")
        }
        let fresh = ServerPeerTable(configuration: new)
        let report = table.withLock { table in
            let (next, report) = table.reloaded(with: fresh)
            table = next
            return report
        }
        return report
    }
}
