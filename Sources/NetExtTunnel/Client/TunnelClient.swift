import Crypto
import Foundation
import NetExt
import NetExtCore
import NetExtLinux
import Synchronization
import TunnelProtocol

/// The client side of the NetExt tunnel protocol: the handshake (with retries and cookies), then
/// two data-plane threads (TUN → UDP and UDP → TUN) and a timer thread for rekeying, keepalives
/// and noticing a server that stopped answering.
public final class TunnelClient: Sendable {
    struct State {
        var current: TransportSession?
        var previous: TransportSession?
        var pending: HandshakeInitiator?
        var pendingSince = Date.distantPast
        var firstAttempt: Date?
        var cookie: [UInt8]?
        var lastSent = Date.distantPast
        var lastReceived = Date.distantPast
        var lastHandshake = Date.distantPast
        var reasserting = false
        var dropped: UInt64 = 0
        var bytesIn: UInt64 = 0
        var bytesOut: UInt64 = 0
    }

    let server: SocketAddress
    let serverKey: Curve25519.KeyAgreement.PublicKey
    let staticKey: Curve25519.KeyAgreement.PrivateKey
    let timing: TunnelTiming
    let socket: UDPSocket
    private let state = Mutex(State())
    private let running = Mutex(true)
    /// Called when the tunnel starts or stops reconnecting.
    let onReasserting: @Sendable (Bool) -> Void
    let log: @Sendable (String) -> Void

    public init(
        server: SocketAddress, serverKey: Curve25519.KeyAgreement.PublicKey, staticKey: Curve25519.KeyAgreement.PrivateKey,
        timing: TunnelTiming = .standard, onReasserting: @escaping @Sendable (Bool) -> Void = { _ in }, log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(NetExtError) {
        self.server = server
        self.serverKey = serverKey
        self.staticKey = staticKey
        self.timing = timing
        self.onReasserting = onReasserting
        self.log = log
        do {
            socket = try UDPSocket(bindingTo: SocketAddress(address: server.isIPv6 ? [UInt8](repeating: 0, count: 16) : [0, 0, 0, 0], port: 0))
            try socket.connect(to: server)
        } catch {
            throw NetExtError(.connectionFailed, "cannot open a UDP socket to \(server): \(error)")
        }
    }

    /// Performs the first handshake, retrying every `rekeyTimeout`, for at most `deadline`.
    public func connect(deadline: TimeInterval) throws(NetExtError) -> TunnelAssignment {
        let giveUp = Date().addingTimeInterval(deadline)
        socket.setReceiveTimeout(milliseconds: 500)
        defer { socket.setReceiveTimeout(milliseconds: 0) }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var cookie: [UInt8]?
        while Date() < giveUp {
            let initiator: HandshakeInitiator
            do {
                initiator = try HandshakeInitiator(staticKey: staticKey, responderPublicKey: serverKey, senderIndex: UInt32.random(in: 1...UInt32.max), cookie: cookie, timing: timing)
                try initiator.initiation.withUnsafeBytes { try socket.send($0) }
            } catch {
                throw NetExtError(.connectionFailed, "cannot send the handshake to \(server): \(error)")
            }
            let attemptEnds = min(giveUp, Date().addingTimeInterval(timing.rekeyTimeout))
            while Date() < attemptEnds {
                guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else { continue }
                let message = Array(buffer[..<received.count])
                switch MessageType.of(message) {
                case .handshakeResponse:
                    guard let (session, assignment) = try? initiator.consumeResponse(message) else { continue }
                    state.withLock { state in
                        state.current = session
                        state.lastHandshake = Date()
                        state.lastReceived = Date()
                    }
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

    var isRunning: Bool { running.withLock { $0 } }

    /// Starts the data plane on `flow`.
    public func run(flow: PacketFlow) {
        Thread.detachNewThread { self.outboundLoop(flow: flow) }
        Thread.detachNewThread { self.inboundLoop(flow: flow) }
        Thread.detachNewThread { self.timerLoop() }
    }

    /// Stops every thread and closes the socket.
    public func stop() {
        running.withLock { $0 = false }
        socket.close()
    }

    /// Byte counts (received, sent) of encrypted datagrams.
    public var byteCounts: (received: UInt64, sent: UInt64) { state.withLock { ($0.bytesIn, $0.bytesOut) } }

    // MARK: Loops

    private func outboundLoop(flow: PacketFlow) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while isRunning {
            guard PacketIO.waitReadable(flow.fileDescriptor, milliseconds: 250) else { continue }
            guard let count = try? buffer.withUnsafeMutableBytes({ try flow.read(into: $0) }), count > 0 else { continue }
            let packet = Array(buffer[..<count])
            let now = Date()
            let message: [UInt8]? = state.withLock { state in
                guard var session = state.current, let sealed = try? session.seal(packet, now: now) else {
                    state.dropped += 1
                    return nil
                }
                state.current = session
                state.lastSent = now
                state.bytesOut += UInt64(sealed.count)
                return sealed
            }
            if let message { try? message.withUnsafeBytes { try socket.send($0) } }
        }
    }

    private func inboundLoop(flow: PacketFlow) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while isRunning {
            guard let received = try? buffer.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else {
                if !isRunning { return }
                continue
            }
            let message = Array(buffer[..<received.count])
            let now = Date()
            switch MessageType.of(message) {
            case .transportData:
                let packet: [UInt8]? = state.withLock { state in
                    let index = message.readBigEndianUInt32(at: 4)
                    var opened: [UInt8]?
                    if state.current?.localIndex == index { opened = try? state.current?.open(message, now: now) }
                    else if state.previous?.localIndex == index { opened = try? state.previous?.open(message, now: now) }
                    guard let opened else {
                        state.dropped += 1
                        return nil
                    }
                    state.lastReceived = now
                    state.bytesIn += UInt64(message.count)
                    return opened
                }
                guard let packet, !packet.isEmpty else { continue }
                guard let info = IPPacketInfo(packet) else {
                    state.withLock { $0.dropped += 1 }
                    continue
                }
                try? packet.withUnsafeBytes { try flow.write(UnsafeRawBufferPointer(rebasing: $0[..<info.length])) }
            case .handshakeResponse:
                let completed: Bool = state.withLock { state in
                    guard let pending = state.pending, let (session, _) = try? pending.consumeResponse(message, now: now) else { return false }
                    state.previous = state.current
                    state.current = session
                    state.pending = nil
                    state.firstAttempt = nil
                    state.lastHandshake = now
                    state.lastReceived = now
                    let wasReasserting = state.reasserting
                    state.reasserting = false
                    return wasReasserting
                }
                if completed {
                    log("handshake completed; tunnel restored")
                    onReasserting(false)
                }
            case .cookieReply:
                state.withLock { state in
                    guard let pending = state.pending,
                          let cookie = try? CookieGenerator.openReply(message, responderPublicKey: serverKey, sentMAC1: pending.sentMAC1) else { return }
                    state.cookie = cookie
                    state.pendingSince = .distantPast  // retry at once, with the cookie
                }
            default:
                state.withLock { $0.dropped += 1 }
            }
        }
    }

    private func timerLoop() {
        while isRunning {
            Thread.sleep(forTimeInterval: 0.25)
            let now = Date()
            var becameReasserting = false
            let outgoing: [[UInt8]] = state.withLock { state in
                var messages: [[UInt8]] = []
                // A server that stopped answering: we sent, and heard nothing for keepalive + rekey timeout.
                let silent = state.lastSent > state.lastReceived && now.timeIntervalSince(state.lastReceived) > timing.keepaliveTimeout + timing.rekeyTimeout
                let needsHandshake = state.current == nil || state.current!.needsRekey(now: now) || state.current!.isExpired(now: now) || silent
                if needsHandshake && now.timeIntervalSince(state.pendingSince) >= timing.rekeyTimeout {
                    if state.firstAttempt == nil { state.firstAttempt = now }
                    if silent && !state.reasserting {
                        state.reasserting = true
                        becameReasserting = true
                    }
                    if let initiator = try? HandshakeInitiator(staticKey: staticKey, responderPublicKey: serverKey, senderIndex: UInt32.random(in: 1...UInt32.max), cookie: state.cookie, timing: timing) {
                        state.pending = initiator
                        state.pendingSince = now
                        messages.append(initiator.initiation)
                    }
                }
                // Passive keepalive: we received data but have not sent anything since.
                if var session = state.current, state.lastReceived > state.lastSent,
                   now.timeIntervalSince(state.lastSent) >= timing.keepaliveTimeout, now.timeIntervalSince(state.lastReceived) < timing.keepaliveTimeout * 2,
                   let keepalive = try? session.seal([], now: now) {
                    state.current = session
                    state.lastSent = now
                    messages.append(keepalive)
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
