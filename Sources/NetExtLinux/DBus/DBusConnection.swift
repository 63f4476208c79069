import NetExtCore
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A connection to a D-Bus bus over its Unix socket: SASL EXTERNAL authentication as this
/// process's uid, `Hello`, then method calls that wait for their answer with a deadline. Signals
/// that arrive meanwhile are queued (at most `signalQueueLimit`, the oldest dropped and counted)
/// for `nextSignal(within:)`; method calls addressed to us are answered `UnknownMethod`.
/// Calls are serialized: one thread talks on the socket at a time.
public final class DBusConnection: Sendable {
    /// The address this connection reached.
    public let address: DBusAddress
    /// The unique name the bus gave us (`:1.42`).
    public let uniqueName: String
    /// How long a call waits for its answer unless told otherwise: the connection's timeout.
    public let callTimeoutSeconds: Double
    /// Signals kept for `nextSignal(within:)` before the oldest are dropped.
    public static let signalQueueLimit = 1_024

    private let socket: TCPSocket
    private let state: Mutex<State>

    private struct State {
        var nextSerial: UInt32 = 1
        var inbound: [UInt8] = []
        var signals: [DBusMessage] = []
        var droppedSignals = 0
        var closed = false
    }

    /// Connects to the system bus: `DBUS_SYSTEM_BUS_ADDRESS`, else the well-known socket.
    public static func system(timeoutSeconds: Double = 5) throws(DBusError) -> DBusConnection {
        let text = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? DBusAddress.defaultSystemBus
        var lastFault: DBusError = .badAddress(text, reason: "it is empty")
        for address in try DBusAddress.parseList(text) {
            do { return try DBusConnection(address: address, timeoutSeconds: timeoutSeconds) } catch { lastFault = error }
        }
        throw lastFault
    }

    /// Connects to `address`, authenticates and says `Hello`, each step within `timeoutSeconds`,
    /// which later calls wait at most too unless they say otherwise.
    public init(address: DBusAddress, timeoutSeconds: Double = 5) throws(DBusError) {
        self.address = address
        callTimeoutSeconds = timeoutSeconds
        guard let socket = TCPSocket.connect(unixPath: address.socketPath, timeoutMilliseconds: Int(timeoutSeconds * 1000)) else {
            throw .unreachable(address: address.description, reason: String(cString: strerror(errno)))
        }
        self.socket = socket
        state = Mutex(State())
        let uid = Array(String(getuid()).utf8).map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
        guard socket.write([0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8)) else { throw .closed }
        let answer = try Self.readLine(socket, timeoutSeconds: timeoutSeconds)
        guard answer.hasPrefix("OK ") else { throw .authenticationRefused(answer) }
        guard socket.write(Array("BEGIN\r\n".utf8)) else { throw .closed }
        let hello = DBusMessage.methodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello")
        let reply = try Self.exchange(hello, socket: socket, state: state, timeoutSeconds: timeoutSeconds)
        guard let name = reply.body.first?.stringValue, !name.isEmpty else { throw .unexpectedReply(member: "Hello", expected: "s", found: reply.signature) }
        uniqueName = name
    }

    /// Calls a method and returns its answer's body, waiting at most `timeoutSeconds` (default:
    /// the connection's); a D-Bus error answer throws `.remote`.
    public func call(_ message: DBusMessage, timeoutSeconds: Double? = nil) throws(DBusError) -> [DBusValue] {
        try Self.exchange(message, socket: socket, state: state, timeoutSeconds: timeoutSeconds ?? callTimeoutSeconds).body
    }

    /// The next queued or arriving signal, or nil if none comes within `seconds`.
    public func nextSignal(within seconds: Double) throws(DBusError) -> DBusMessage? {
        try state.withLock { (state: inout State) throws(DBusError) -> DBusMessage? in
            if !state.signals.isEmpty { return state.signals.removeFirst() }
            let deadline = Self.now() + seconds
            while let message = try Self.receive(socket, &state, until: deadline) {
                if message.kind == .signal { return message }
                Self.answerIfCall(message, socket: socket, state: &state)
            }
            return nil
        }
    }

    /// Signals dropped because the queue was full.
    public var droppedSignals: Int { state.withLock { $0.droppedSignals } }

    /// Closes the socket; later calls throw `.closed`.
    public func close() {
        state.withLock { state in
            state.closed = true
            socket.shutdown()
        }
    }

    private static func exchange(
        _ message: DBusMessage, socket: TCPSocket, state: borrowing Mutex<State>, timeoutSeconds: Double
    ) throws(DBusError) -> DBusMessage {
        try state.withLock { (state: inout State) throws(DBusError) -> DBusMessage in
            guard !state.closed else { throw .closed }
            let serial = state.nextSerial
            state.nextSerial = serial == UInt32.max ? 1 : serial + 1
            guard socket.write(try message.encoded(serial: serial)) else { throw .closed }
            let member = message.member ?? "?"
            let deadline = now() + timeoutSeconds
            while true {
                guard let answer = try receive(socket, &state, until: deadline) else {
                    throw .timedOut(member: member, seconds: timeoutSeconds)
                }
                switch answer.kind {
                case .methodReturn where answer.replySerial == serial:
                    return answer
                case .error where answer.replySerial == serial:
                    throw .remote(name: answer.errorName ?? "", message: answer.errorMessage)
                case .signal:
                    if state.signals.count >= signalQueueLimit {
                        state.signals.removeFirst()
                        state.droppedSignals += 1
                    }
                    state.signals.append(answer)
                default:
                    answerIfCall(answer, socket: socket, state: &state)
                }
            }
        }
    }

    /// A method call someone made to us: answered `UnknownMethod` unless no answer is wanted.
    private static func answerIfCall(_ message: DBusMessage, socket: TCPSocket, state: inout State) {
        guard message.kind == .methodCall, message.flags & DBusMessage.noReplyExpected == 0 else { return }
        var error = DBusMessage(kind: .error)
        error.errorName = "org.freedesktop.DBus.Error.UnknownMethod"
        error.replySerial = message.serial
        error.destination = message.sender
        error.body = [.string("NetExt answers no method calls.")]
        let serial = state.nextSerial
        state.nextSerial = serial == UInt32.max ? 1 : serial + 1
        if let bytes = try? error.encoded(serial: serial) { _ = socket.write(bytes) }
    }

    /// The next whole message, or nil at the deadline.
    private static func receive(_ socket: TCPSocket, _ state: inout State, until deadline: Double) throws(DBusError) -> DBusMessage? {
        while true {
            if state.inbound.count >= 16 {
                let length = try DBusMessage.length(ofMessageStartingWith: Array(state.inbound.prefix(16)))
                if state.inbound.count >= length {
                    let bytes = Array(state.inbound.prefix(length))
                    state.inbound.removeFirst(length)
                    return try DBusMessage(decoding: bytes)
                }
            }
            let remaining = deadline - now()
            guard remaining > 0 else { return nil }
            guard PacketIO.waitReadable(socket.fd, milliseconds: Int32(min(remaining * 1000 + 1, 60_000))) else { continue }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = buffer.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { throw .closed }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .closed
            }
            state.inbound += buffer[..<count]
        }
    }

    private static func readLine(_ socket: TCPSocket, timeoutSeconds: Double) throws(DBusError) -> String {
        var line: [UInt8] = []
        let deadline = now() + timeoutSeconds
        while !line.suffix(2).elementsEqual([13, 10]) {
            guard line.count < 512 else { throw .authenticationRefused(String(decoding: line, as: UTF8.self)) }
            let remaining = deadline - now()
            guard remaining > 0, PacketIO.waitReadable(socket.fd, milliseconds: Int32(remaining * 1000 + 1)) else {
                throw .timedOut(member: "AUTH", seconds: timeoutSeconds)
            }
            var byte: UInt8 = 0
            let count = recv(socket.fd, &byte, 1, 0)
            if count == 0 { throw .closed }
            if count < 0 { if errno == EINTR { continue }; throw .closed }
            line.append(byte)
        }
        return String(decoding: line.dropLast(2), as: UTF8.self)
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
