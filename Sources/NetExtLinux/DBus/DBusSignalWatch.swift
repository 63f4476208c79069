import Foundation
import NetExtCore
import Synchronization

/// Hears the signals of a bus that match some rules, on a connection and a thread of its own
/// (a connection waiting for signals holds its lock, so calls need another), and tells
/// `heard` of each. It ends with `stop()`, or by itself when the bus or the connection closes
/// (`isWatching` is false then).
public final class DBusSignalWatch: Sendable {
    private let connection: DBusConnection
    private let state: Mutex<State>
    /// How long one wait for a signal lasts: `stop()` returns within about this long.
    static let pollSeconds = 0.25

    private struct State {
        var heard: (@Sendable (DBusMessage) -> Void)?
        var watching = true
    }

    /// Connects to `address`, adds every match rule ("Match Rules" in the D-Bus Specification),
    /// and starts telling `heard` of each signal that matches, on the watch's thread. `heard`
    /// must return quickly and must not call `stop()`.
    public init(address: DBusAddress, rules: [String], heard: @escaping @Sendable (DBusMessage) -> Void) throws(DBusError) {
        connection = try DBusConnection(address: address, timeoutSeconds: 5)
        state = Mutex(State(heard: heard))
        do {
            for rule in rules { try connection.addMatch(rule) }
        } catch {
            connection.close()
            throw error
        }
        let thread = Thread { [self] in listen() }
        thread.name = "netext-dbus-signals"
        thread.start()
    }

    /// Whether signals are still heard.
    public var isWatching: Bool { state.withLock { $0.watching } }

    /// Ends the watch: `heard` is not called after this returns.
    public func stop() {
        state.withLock { state in
            state.watching = false
            state.heard = nil
        }
        connection.close()
    }

    private func listen() {
        while isWatching {
            let signal: DBusMessage?
            do {
                signal = try connection.nextSignal(within: Self.pollSeconds)
            } catch {
                break
            }
            guard let signal else { continue }
            // Called under the lock, so that `stop()` returning means no call is under way.
            state.withLock { state in state.heard?(signal) }
        }
        state.withLock { state in
            state.watching = false
            state.heard = nil
        }
        connection.close()
    }
}
