import Foundation
import Logging
import NetExtCore
import NetExtLinux
import Synchronization

/// The tunnel server's local status socket: each connection from root or the server's own user
/// receives the server's status (`TunnelServerStatus`, one JSON document) and is closed; it reads
/// nothing, so it has nothing to parse. `netext-server tunnel show` is its client.
public final class TunnelServerStatusSocket: Sendable {
    /// Where the socket is unless `--status-socket` says otherwise: one per listening port, so
    /// servers on different ports (or in different network namespaces, on different ports) do
    /// not meet.
    public static func defaultPath(port: UInt16) -> String {
        "/run/netext-server/tunnel-\(port).sock"
    }

    private let listener: UnixStreamListener
    private let running = Mutex(true)
    private let finished = DispatchSemaphore(value: 0)

    /// Listens at `path` and answers with `server.status()` on a thread of its own.
    public init(path: String, server: TunnelServer, logger: Logger) throws(SystemError) {
        listener = try UnixStreamListener(path: path)
        Thread.detachNewThread { self.serve(server, logger: logger) }
    }

    private func serve(_ server: TunnelServer, logger: Logger) {
        let owner = geteuid()
        let encoder = Self.encoder()
        while running.withLock({ $0 }) {
            guard let (connection, uid) = (try? listener.accept(waitMilliseconds: 250)) ?? nil else { continue }
            guard uid == 0 || uid == owner else {
                logger.warning("status socket: refused a connection from another user", metadata: ["uid": "\(uid)"])
                connection.close()
                continue
            }
            connection.setTimeouts(milliseconds: 2000)
            if let data = try? encoder.encode(server.status()) { _ = connection.write(Array(data) + [0x0a]) }
            connection.close()
        }
        finished.signal()
    }

    /// Stops answering and removes the socket file.
    public func close() {
        running.withLock { $0 = false }
        _ = finished.wait(timeout: .now() + 2)
        listener.close()
    }

    /// Reads the status of the server listening at `path`. Errors are sentences naming the path.
    public static func read(path: String, timeoutMilliseconds: Int = 5000) throws(NetExtError) -> TunnelServerStatus {
        guard let connection = TCPSocket.connect(unixPath: path, timeoutMilliseconds: timeoutMilliseconds) else {
            let reason = String(cString: strerror(errno))
            throw NetExtError(.connectionFailed, "cannot reach a tunnel server's status socket at \(path) (\(reason)); is netext-server tunnel running there? --status-socket names another path")
        }
        defer { connection.close() }
        guard let bytes = connection.readToEnd(limit: 64 << 20), !bytes.isEmpty else {
            throw NetExtError(.permissionDenied, "the tunnel server at \(path) closed without an answer; only root and the server's own user may read its status")
        }
        do { return try decoder().decode(TunnelServerStatus.self, from: Data(bytes)) } catch {
            throw NetExtError(.protocolError, "what \(path) answered is not a tunnel server's status")
        }
    }

    /// The status as JSON: what the socket sends (one line), and `show --json` (pretty).
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
