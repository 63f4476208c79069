import NetExtCore

/// A bus address NetExt can connect to (D-Bus Specification, "Server Addresses"): the Unix
/// socket transports `unix:path=…` and `unix:abstract=…`, values percent-decoded.
public struct DBusAddress: Sendable, Hashable, CustomStringConvertible {
    /// The socket path; abstract names start with `@`, as `TCPSocket.connect(unixPath:)` reads them.
    public var socketPath: String

    /// The system bus's address when `DBUS_SYSTEM_BUS_ADDRESS` is unset ("Well-known Message Bus
    /// Instances").
    public static let defaultSystemBus = "unix:path=/var/run/dbus/system_bus_socket"

    /// The addresses of `text` (several are separated by `;`) NetExt can use, in order; throws if
    /// none can be, naming why the first could not.
    public static func parseList(_ text: String) throws(DBusError) -> [DBusAddress] {
        var usable: [DBusAddress] = []
        var firstFault: DBusError?
        for entry in text.split(separator: ";") {
            do { usable.append(try DBusAddress(parsing: String(entry))) } catch { firstFault = firstFault ?? error }
        }
        if usable.isEmpty { throw firstFault ?? .badAddress(text, reason: "it is empty") }
        return usable
    }

    /// One `transport:key=value,…` address.
    public init(parsing text: String) throws(DBusError) {
        guard let colon = text.firstIndex(of: ":") else { throw .badAddress(text, reason: "it has no transport before a ':'") }
        let transport = text[..<colon]
        guard transport == "unix" else { throw .badAddress(text, reason: "the transport \"\(transport)\" is not supported, only unix") }
        var keys: [String: String] = [:]
        for pair in text[text.index(after: colon)...].split(separator: ",") {
            guard let equals = pair.firstIndex(of: "=") else { throw .badAddress(text, reason: "\"\(pair)\" is not key=value") }
            guard let value = try? PercentEncoding.decode(pair[pair.index(after: equals)...]) else {
                throw .badAddress(text, reason: "the value of \(pair[..<equals]) has a broken %-escape")
            }
            keys[String(pair[..<equals])] = value
        }
        if let path = keys["path"], !path.isEmpty {
            socketPath = path
        } else if let name = keys["abstract"], !name.isEmpty {
            socketPath = "@" + name
        } else {
            throw .badAddress(text, reason: "it names neither path= nor abstract=")
        }
    }

    public var description: String {
        socketPath.hasPrefix("@") ? "unix:abstract=\(socketPath.dropFirst())" : "unix:path=\(socketPath)"
    }
}
