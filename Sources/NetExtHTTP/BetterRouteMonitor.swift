import Foundation
import NetExtLinux
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells open stream tasks when the machine would now reach their peer another way (Foundation's
/// `betterRouteDiscoveredForStreamTask`, seed 002: a Wi-Fi network joined while on cellular).
/// One netlink watcher for the process (`RouteChangeWatcher`: links, addresses, routes); after
/// each burst of changes every watching task asks the kernel which source address it would
/// pick for its peer now — a UDP socket connected to the peer, which sends nothing — and a
/// task whose connection has another source has a better route. The task decides what to do;
/// its connection is left as it is.
final class BetterRouteMonitor: Sendable {
    static let shared = BetterRouteMonitor()

    private struct State {
        var watchers: [UUID: @Sendable () -> Void] = [:]
        var watcher: RouteChangeWatcher?
    }
    private let state = Mutex(State())

    /// Calls `check` after each burst of routing changes until the returned key is passed to
    /// ``stopWatching(_:)``.
    func watch(_ check: @escaping @Sendable () -> Void) -> UUID {
        let key = UUID()
        let start: RouteChangeWatcher? = state.withLock { state in
            state.watchers[key] = check
            guard state.watcher == nil else { return nil }
            let watcher = RouteChangeWatcher()
            state.watcher = watcher
            return watcher
        }
        start?.start { [weak self] in
            let checks = self?.state.withLock { Array($0.watchers.values) } ?? []
            for check in checks { check() }
        }
        return key
    }

    /// Stops calling the check; the watcher stops with the last one.
    func stopWatching(_ key: UUID) {
        let stop: RouteChangeWatcher? = state.withLock { state in
            state.watchers[key] = nil
            guard state.watchers.isEmpty, let watcher = state.watcher else { return nil }
            state.watcher = nil
            return watcher
        }
        stop?.stop()
    }

    /// The source address the kernel would use now to reach `peer`, or nil when it has no route.
    static func preferredSource(for peer: NIOCore.SocketAddress) -> String? {
        let family: Int32
        switch peer {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        default: return nil
        }
        let descriptor = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let connected = peer.withSockAddr { address, length in connect(descriptor, address, socklen_t(length)) }
        guard connected == 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return nil }
        let local: NIOCore.SocketAddress?
        switch Int32(storage.ss_family) {
        case AF_INET:
            local = withUnsafeBytes(of: &storage) { NIOCore.SocketAddress($0.load(as: sockaddr_in.self), host: "") }
        case AF_INET6:
            local = withUnsafeBytes(of: &storage) { NIOCore.SocketAddress($0.load(as: sockaddr_in6.self), host: "") }
        default:
            local = nil
        }
        return local?.ipAddress
    }
}
