import Crypto
import Foundation
import NetExt
import NetExtCore
import NetExtLinux
import Synchronization
import TunnelProtocol

/// The client side of the NetExt tunnel protocol: the handshake (with retries and cookies), then
/// two data-plane threads (TUN → UDP and UDP → TUN, each working on batches and taking the lock
/// once per batch) and a timer thread for rekeying, keepalives and noticing a server that
/// stopped answering.
public final class TunnelClient: Sendable {
    struct State {
        var current: TransportSession?
        var previous: TransportSession?
        var pending: HandshakeInitiator?
        var cookie: [UInt8]?
        /// When to retry, rekey, keep alive and reassert (pure; this class performs it).
        var timers: TunnelClientTimers
        var dropped: UInt64 = 0
        /// Link-scoped packets the system sent into the tunnel and it did not carry.
        var linkScoped: UInt64 = 0
        var bytesIn: UInt64 = 0
        var bytesOut: UInt64 = 0
        var handshakes = 0
        var lastHandshake: Date?
    }

    let server: SocketAddress
    let serverKey: Curve25519.KeyAgreement.PublicKey
    let staticKey: Curve25519.KeyAgreement.PrivateKey
    let timing: TunnelTiming
    let socket: UDPSocket
    private let state: Mutex<State>
    private let running = Mutex(true)
    /// Called when the tunnel starts or stops reconnecting.
    let onReasserting: @Sendable (Bool) -> Void
    /// Called after every completed handshake, with the statistics it changed.
    let onStatistics: @Sendable (TunnelStatistics) -> Void
    let log: @Sendable (String) -> Void

    public init(
        server: SocketAddress, serverKey: Curve25519.KeyAgreement.PublicKey, staticKey: Curve25519.KeyAgreement.PrivateKey,
        timing: TunnelTiming = .standard, onReasserting: @escaping @Sendable (Bool) -> Void = { _ in },
        onStatistics: @escaping @Sendable (TunnelStatistics) -> Void = { _ in }, log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(NetExtError) {
        self.onStatistics = onStatistics
        self.server = server
        self.serverKey = serverKey
        self.staticKey = staticKey
        self.timing = timing
        state = Mutex(State(timers: TunnelClientTimers(timing: timing)))
        self.onReasserting = onReasserting
        self.log = log
        do {
            socket = try UDPSocket(bindingTo: SocketAddress(address: server.isIPv6 ? [UInt8](repeating: 0, count: 16) : [0, 0, 0, 0], port: 0))
            try socket.connect(to: server)
        } catch {
            throw NetExtError(.connectionFailed, "cannot open a UDP socket to \(server): \(error)")
        }
    }

    /// Performs the first handshake, retrying after 1, 2 and 4 s and then every `rekeyTimeout`
    /// (at once with a cookie when the server asks for one), for at most `deadline`. The
    /// wait happens on a thread of its own, never on the task pool (whose few threads a provider
    /// shares with its connection to netextd, and in-process labs with everything else).
    public func connect(deadline: TimeInterval) async throws(NetExtError) -> TunnelAssignment {
        try await BlockingWork.run { [self] in Result { () throws(NetExtError) in try connectWaiting(deadline: deadline) } }.get()
    }

    /// `connect(deadline:)` on the caller's thread, blocking it.
    public func connectWaiting(deadline: TimeInterval) throws(NetExtError) -> TunnelAssignment {
        let giveUp = Date().addingTimeInterval(deadline)
        socket.setReceiveTimeout(milliseconds: 500)
        defer { socket.setReceiveTimeout(milliseconds: 0) }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var cookie: [UInt8]?
        var attempt = 0
        while Date() < giveUp {
            let initiator: HandshakeInitiator
            do {
                initiator = try HandshakeInitiator(staticKey: staticKey, responderPublicKey: serverKey, senderIndex: UInt32.random(in: 1...UInt32.max), cookie: cookie, timing: timing)
                try initiator.initiation.withUnsafeBytes { try socket.send($0) }
            } catch {
                throw NetExtError(.connectionFailed, "cannot send the handshake to \(server): \(error)")
            }
            let attemptEnds = min(giveUp, Date().addingTimeInterval(Self.connectRetryDelay(attempt: attempt, rekeyTimeout: timing.rekeyTimeout)))
            attempt += 1
            while Date() < attemptEnds {
                guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else { continue }
                let message = Array(buffer[..<received.count])
                switch MessageType.of(message) {
                case .handshakeResponse:
                    guard let (session, assignment) = try? initiator.consumeResponse(message) else { continue }
                    let statistics = state.withLock { state in
                        state.current = session
                        _ = state.timers.handshakeCompleted(at: Date())
                        return Self.recordHandshake(&state, server: server)
                    }
                    onStatistics(statistics)
                    return assignment
                case .cookieReply:
                    if let opened = try? CookieGenerator.openReply(message, responderPublicKey: serverKey, sentMAC1: initiator.sentMAC1) {
                        cookie = opened
                        state.withLock { $0.cookie = opened }
                    }
                default:
                    continue
                }
                break
            }
        }
        throw NetExtError(.connectionFailed, "the tunnel server at \(server) did not complete a handshake within \(Int(deadline)) s (wrong server key, our key not configured there, or unreachable)")
    }

    /// How long the first connection waits for an answer to its `attempt`th initiation (from 0):
    /// 1, 2, 4 s, then `rekeyTimeout`. Someone is waiting for a connect, and one lost datagram
    /// (a lossy uplink, or a full handshake queue at a server under a flood) should cost a second,
    /// not WireGuard's five; rekeys of a live session keep `rekeyTimeout`.
    static func connectRetryDelay(attempt: Int, rekeyTimeout: TimeInterval) -> TimeInterval {
        min(rekeyTimeout, Double(1 << min(attempt, 16)))
    }

    var isRunning: Bool { running.withLock { $0 } }

    /// Starts the data plane on `flow`.
    public func run(flow: TunPacketFlow) {
        Thread.detachNewThread { self.outboundLoop(flow: flow) }
        Thread.detachNewThread { self.inboundLoop(flow: flow) }
        Thread.detachNewThread { self.timerLoop() }
    }

    /// Stops every thread and closes the socket.
    public func stop() {
        running.withLock { $0 = false }
        socket.close()
    }

    /// Counts a completed handshake; what `onStatistics` reports.
    private static func recordHandshake(_ state: inout State, server: SocketAddress, at now: Date = Date()) -> TunnelStatistics {
        state.handshakes += 1
        state.lastHandshake = now
        return TunnelStatistics(endpoint: server.description, lastHandshake: now, handshakes: state.handshakes)
    }

    /// Byte counts (received, sent) of encrypted datagrams.
    public var byteCounts: (received: UInt64, sent: UInt64) { state.withLock { ($0.bytesIn, $0.bytesOut) } }

    /// Link-scoped packets the system sent into the tunnel that it did not carry
    /// (`IPPacketInfo.isLinkScoped`).
    public var linkScopedPacketsDropped: UInt64 { state.withLock { $0.linkScoped } }

    // MARK: Loops

    /// TUN → UDP: reads a batch (the kernel's TCP super-packets split into MTU-sized packets),
    /// takes the batch's counters under the lock once, seals each packet where it lies, and
    /// sends the batch with sendmmsg / UDP GSO.
    private func outboundLoop(flow: TunPacketFlow) {
        let reader = flow.makeReader()
        let batch = PacketBatch(
            capacity: 192, maximumPacket: flow.maximumPacket, headroom: WireSize.transportHeader,
            tailroom: TransportSession.paddingMultiple + WireSize.tag)
        let sender = DatagramSender(socket: socket, capacity: 192)
        while isRunning {
            batch.removeAll()
            let count: Int
            do { count = try reader.fill(batch, waitMilliseconds: 250) } catch {
                if isRunning { log("reading the tunnel interface failed: \(error)") }
                return
            }
            countDropped(reader.takeDropped())
            guard count > 0 else { continue }
            sealAndSend(batch, count: count, sender: sender)
        }
    }

    /// Seals a batch read from the tunnel interface (counters reserved under the lock once) and
    /// sends it.
    /// Packets that belong to the link (router solicitations, MLD reports, link-local
    /// multicast: `IPPacketInfo.isLinkScoped`) are dropped here and counted apart: the server
    /// would drop them anyway, and a tunnel that sent them would not be idle when it is.
    private func sealAndSend(_ batch: PacketBatch, count: Int, sender: DatagramSender) {
        var messageBytes = 0
        var sealed = 0
        for index in 0..<count {
            guard !IPPacketInfo.isLinkScoped(UnsafeRawBufferPointer(batch.packet(index))) else { continue }
            messageBytes += TransportCipher.messageLength(packetLength: batch.length(index))
            sealed += 1
        }
        let linkScoped = count - sealed
        let now = Date()
        let reserved: (first: UInt64, cipher: TransportCipher, receiver: UInt32)? = state.withLock { state in
            state.linkScoped += UInt64(linkScoped)
            guard sealed > 0 else { return nil }
            guard var session = state.current, let first = try? session.reserveCounters(sealed, now: now) else {
                state.dropped += UInt64(sealed)
                return nil
            }
            state.current = session
            state.timers.sent(at: now)
            state.bytesOut += UInt64(messageBytes)
            return (first, session.sendCipher, session.remoteIndex)
        }
        guard let reserved else { return }
        var counter = reserved.first
        for index in 0..<count {
            let slot = batch.slot(index)
            if linkScoped > 0, IPPacketInfo.isLinkScoped(UnsafeRawBufferPointer(batch.packet(index))) { continue }
            let length = reserved.cipher.seal(packetLength: batch.length(index), in: slot, receiverIndex: reserved.receiver, counter: counter)
            counter += 1
            sender.add(UnsafeRawBufferPointer(rebasing: slot[..<length]))
        }
        sender.flush()
        countDropped(sender.takeDropped())
    }

    /// Adds what a data-path stage dropped (malformed offload packets, refused writes and sends).
    private func countDropped(_ count: Int) {
        if count > 0 { state.withLock { $0.dropped += UInt64(count) } }
    }

    /// UDP → TUN: receives a batch (recvmmsg, UDP GRO), opens each transport message in place
    /// outside the lock, checks the batch's counters against the replay window under the lock
    /// once, and writes the packets (TCP segments joined again where the interface allows).
    private func inboundLoop(flow: TunPacketFlow) {
        let receiver = DatagramReceiver(socket: socket)
        let writer = flow.makeWriter()
        // What the kernel answers at once to the packets just written (TCP ACKs, echo replies)
        // is already queued when the write returns: send it from here instead of waking the
        // outbound thread.
        let replies = flow.makeReader()
        let replyBatch = PacketBatch(
            capacity: 128, maximumPacket: flow.maximumPacket, headroom: WireSize.transportHeader,
            tailroom: TransportSession.paddingMultiple + WireSize.tag)
        let replySender = DatagramSender(socket: socket, capacity: 128)
        var opened: [OpenedTransportMessage] = []
        opened.reserveCapacity(1024)
        while isRunning {
            let filled: Int
            do {
                guard let count = try receiver.receive() else { return }
                filled = count
            } catch {
                if !isRunning { return }
                log("receiving from the server failed: \(error)")
                Thread.sleep(forTimeInterval: 0.05)
                continue
            }
            guard filled > 0 else { continue }
            let now = Date()
            let keys = state.withLock { state in
                (current: state.current.map { ($0.localIndex, $0.receiveCipher) }, previous: state.previous.map { ($0.localIndex, $0.receiveCipher) })
            }
            opened.removeAll(keepingCapacity: true)
            var rejected: UInt64 = 0
            receiver.forEachDatagram(in: filled) { bufferIndex, datagram in
                guard MessageType.of(UnsafeRawBufferPointer(datagram)) == .transportData else {
                    handleControl(Array(datagram), now: now)
                    return
                }
                let message = TransportReceiveStep.open(datagram, buffer: bufferIndex) { index in
                    keys.current?.0 == index ? keys.current.map { ($0.1, 0) } : keys.previous?.0 == index ? keys.previous.map { ($0.1, 0) } : nil
                }
                guard let message else {
                    rejected += 1
                    return
                }
                opened.append(message)
            }
            state.withLock { state in
                for position in opened.indices {
                    let accepted = TransportReceiveStep.acceptCounter(of: opened[position], in: &state, now: now)
                    opened[position].accepted = accepted
                    if accepted {
                        state.bytesIn += UInt64(opened[position].messageLength)
                        state.timers.received(at: now)
                    } else {
                        rejected += 1
                    }
                }
                state.dropped += rejected
            }
            let written = TransportReceiveStep.write(opened, to: writer)
            countDropped(written.notIP + writer.takeDropped())
            replyBatch.removeAll()
            if let count = try? replies.fill(replyBatch, waitMilliseconds: 0), count > 0 {
                sealAndSend(replyBatch, count: count, sender: replySender)
            }
            countDropped(replies.takeDropped())
        }
    }

    /// Handshake responses and cookie replies that arrive while the tunnel runs.
    private func handleControl(_ message: [UInt8], now: Date) {
        switch MessageType.of(message) {
        case .handshakeResponse:
            let outcome: (restored: Bool, statistics: TunnelStatistics)? = state.withLock { state in
                guard let pending = state.pending, let (session, _) = try? pending.consumeResponse(message, now: now) else { return nil }
                state.previous = state.current
                state.current = session
                state.pending = nil
                let restored = state.timers.handshakeCompleted(at: now)
                return (restored, Self.recordHandshake(&state, server: server, at: now))
            }
            guard let outcome else { return }
            onStatistics(outcome.statistics)
            if outcome.restored {
                log("handshake completed; tunnel restored")
                onReasserting(false)
            }
        case .cookieReply:
            state.withLock { state in
                guard let pending = state.pending,
                      let cookie = try? CookieGenerator.openReply(message, responderPublicKey: serverKey, sentMAC1: pending.sentMAC1) else { return }
                state.cookie = cookie
                state.timers.cookieReceived()  // retry at once, with the cookie
            }
        default:
            state.withLock { $0.dropped += 1 }
        }
    }

    /// Roaming: when the kernel would now reach the server from another local address (the
    /// default route moved, the address changed), the socket is connected anew and a keepalive
    /// tells the server where we are; the tunnel's own addresses do not change, so connections
    /// inside it survive.
    private func followNetworkChange(now: Date) {
        guard let preferred = UDPSocket.preferredSource(toward: server), let current = socket.localAddress,
              preferred.address != current.address else { return }
        do { try socket.reconnect(to: server) } catch {
            log("the network changed but the socket could not follow: \(error)")
            return
        }
        log("network changed: now reaching the server from \(socket.localAddress?.hostText ?? preferred.hostText) (was \(current.hostText))")
        let keepalive: [UInt8]? = state.withLock { state in
            guard var session = state.current, let message = try? session.seal([], now: now) else { return nil }
            state.current = session
            state.timers.keepaliveSent(at: now)
            return message
        }
        if let keepalive { try? keepalive.withUnsafeBytes { try socket.send($0) } }
    }

    private func timerLoop() {
        var lastNetworkCheck = Date.distantPast
        while isRunning {
            Thread.sleep(forTimeInterval: 0.25)
            let now = Date()
            if now.timeIntervalSince(lastNetworkCheck) >= 1 {
                lastNetworkCheck = now
                followNetworkChange(now: now)
            }
            var becameReasserting = false
            let outgoing: [[UInt8]] = state.withLock { state in
                let health: TunnelClientTimers.SessionHealth = state.current.map { session in
                    session.isExpired(now: now) ? .expired : session.needsRekey(now: now) ? .needsRekey : .fresh
                } ?? .none
                var messages: [[UInt8]] = []
                for action in state.timers.tick(now: now, session: health) {
                    switch action {
                    case .beginReasserting:
                        becameReasserting = true
                    case .sendInitiation:
                        if let initiator = try? HandshakeInitiator(staticKey: staticKey, responderPublicKey: serverKey, senderIndex: UInt32.random(in: 1...UInt32.max), cookie: state.cookie, timing: timing) {
                            state.pending = initiator
                            messages.append(initiator.initiation)
                        }
                    case .sendKeepalive:
                        if var session = state.current, let keepalive = try? session.seal([], now: now) {
                            state.current = session
                            messages.append(keepalive)
                        }
                    }
                }
                return messages
            }
            if becameReasserting {
                log("no answer from the server; reconnecting")
                onReasserting(true)
            }
            for message in outgoing { try? message.withUnsafeBytes { try socket.send($0) } }
        }
    }
}

extension TunnelClient.State: ReceivingSessions {}
