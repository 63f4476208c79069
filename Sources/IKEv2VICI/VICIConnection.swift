import NetExtCore
import NetExtLinux

/// A blocking client connection to charon's VICI socket: requests with their responses, and
/// events. One thread uses a connection at a time.
public final class VICIConnection: @unchecked Sendable {
    private let socket: TCPSocket

    private init(socket: TCPSocket) { self.socket = socket }

    /// Connects to the socket at `path`; nil if charon does not listen there (yet).
    public static func connect(path: String, timeoutMilliseconds: Int) -> VICIConnection? {
        TCPSocket.connect(unixPath: path, timeoutMilliseconds: timeoutMilliseconds).map(VICIConnection.init)
    }

    public func close() { socket.close() }

    /// Reads no longer time out (a connection that only waits for events).
    public func waitIndefinitely() { socket.setTimeouts(milliseconds: 0) }

    /// Unblocks a thread waiting in `receive` on this connection.
    public func shutdown() { socket.shutdown() }

    public func send(_ packet: VICIPacket) throws(NetExtError) {
        let bytes: [UInt8]
        do { bytes = try packet.framed() } catch { throw NetExtError(.protocolError, error.description) }
        guard socket.write(bytes) else { throw NetExtError(.connectionFailed, "VICI: charon closed its control socket") }
    }

    /// The next packet; a malformed one is an error naming the offset at fault.
    public func receive() throws(NetExtError) -> VICIPacket {
        guard let header = socket.read(exactly: 4) else { throw NetExtError(.connectionFailed, "VICI: charon closed its control socket or did not answer in time") }
        let length: Int
        do { length = try VICIPacket.length(ofHeader: header) } catch { throw NetExtError(.protocolError, error.description) }
        guard let body = socket.read(exactly: length) else { throw NetExtError(.connectionFailed, "VICI: truncated packet of \(length) bytes") }
        do { return try VICIPacket.decode(body: body[...]) } catch { throw NetExtError(.protocolError, error.description) }
    }

    /// Sends command `name` and returns its response, with the events named `streaming` that
    /// charon sent before it (`list-sas` answers with `list-sa` events). A response with
    /// `success = no` is an error carrying charon's `errmsg` (unless `failing` is false).
    @discardableResult
    public func request(
        _ name: String, _ message: VICIMessage = VICIMessage(), streaming event: String? = nil, failing: Bool = true
    ) throws(NetExtError) -> (response: VICIMessage, events: [VICIMessage]) {
        if let event { try register(event) }
        try send(VICIPacket(.commandRequest, name: name, message: message))
        var events: [VICIMessage] = []
        while true {
            let packet = try receive()
            switch packet.kind {
            case .event where packet.name == event: events.append(packet.message)
            case .event: continue
            case .commandResponse:
                if let event { try unregister(event) }
                if failing, packet.message[text: "success"] == "no" {
                    throw NetExtError(.connectionFailed, "charon refused '\(name)': \(packet.message[text: "errmsg"] ?? "no reason given")")
                }
                return (packet.message, events)
            case .commandUnknown: throw NetExtError(.protocolError, "charon does not know the VICI command '\(name)'")
            default: throw NetExtError(.protocolError, "VICI: unexpected \(packet.kind) packet while waiting for the answer to '\(name)'")
            }
        }
    }

    /// Asks charon to send events named `event` on this connection.
    public func register(_ event: String) throws(NetExtError) {
        try send(VICIPacket(.eventRegister, name: event))
        try awaitConfirmation(of: event)
    }

    public func unregister(_ event: String) throws(NetExtError) {
        try send(VICIPacket(.eventUnregister, name: event))
        try awaitConfirmation(of: event)
    }

    private func awaitConfirmation(of event: String) throws(NetExtError) {
        while true {
            let packet = try receive()
            switch packet.kind {
            case .eventConfirm: return
            case .eventUnknown: throw NetExtError(.protocolError, "charon does not know the VICI event '\(event)'")
            case .event: continue
            default: throw NetExtError(.protocolError, "VICI: unexpected \(packet.kind) packet while (un)registering '\(event)'")
            }
        }
    }
}
