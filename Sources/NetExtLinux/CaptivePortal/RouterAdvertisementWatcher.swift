import Foundation
import NetExtCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Router Advertisements nobody asked for: the periodic and changed ones routers send to all
/// nodes (RFC 4861 §6.2.4), read on one raw ICMPv6 socket for every interface, so that a captive
/// portal a router starts (or stops) announcing (RFC 8910 §2.3, option 37) is noticed without a
/// route change. Each is checked as RFC 4861 §6.1.2 says (link-local source, hop limit 255,
/// code 0); refused and malformed ones are counted, never told. Runs one thread, polling every
/// 500 ms for its stop. Needs root (a raw socket).
public final class RouterAdvertisementWatcher: Sendable {
    /// One valid advertisement: where it arrived and what it announces (nil: no option 37).
    public struct Advertisement: Sendable, Hashable {
        public var interface: String
        public var announcement: CaptivePortalAnnouncement?
    }

    private struct State {
        var stopping = false
        /// The reading thread holds the socket.
        var running = false
        var refused = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Advertisements refused (RFC 4861 §6.1.2) or malformed so far.
    public var refusedCount: Int { state.withLock { $0.refused } }

    /// Opens the socket and calls `onAdvertisement` (on the watcher's thread) for each valid
    /// advertisement until `stop()`.
    public func start(onAdvertisement: @escaping @Sendable (Advertisement) -> Void) throws(SystemError) {
        let fd = socket(AF_INET6, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), Int32(IPPROTO_ICMPV6))
        guard fd >= 0 else { throw SystemError("socket", errno: errno, subject: "ICMPv6 for Router Advertisements") }
        do { try RouterSolicitationExchange.readAdvertisementsOnly(fd, subject: "Router Advertisements") } catch {
            close(fd)
            throw error
        }
        state.withLock { $0 = State(running: true) }
        let thread = Thread { [self] in
            read(fd, onAdvertisement)
            close(fd)
            state.withLock { $0.running = false }
        }
        thread.name = "netext-ra-watcher"
        thread.start()
    }

    /// Stops reading; returns once the thread has let the socket go (at most about 500 ms).
    public func stop() {
        state.withLock { $0.stopping = true }
        for _ in 0..<40 {
            if !state.withLock({ $0.running }) { return }
            usleep(25_000)
        }
    }

    private func read(_ fd: Int32, _ onAdvertisement: @Sendable (Advertisement) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 1500)
        while !state.withLock({ $0.stopping }) {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 500) > 0, let datagram = DatagramExchange.receive(fd, buffer: &buffer) else { continue }
            guard let source = datagram.ipv6Source,
                RouterDiscovery.advertisementProblem(datagram.bytes, source: source.address, hopLimit: datagram.hopLimit) == nil,
                let interface = Self.name(ofIndex: source.scope)
            else {
                state.withLock { $0.refused += 1 }
                continue
            }
            do throws(CaptivePortalError) {
                onAdvertisement(Advertisement(interface: interface, announcement: try CaptivePortalAnnouncement.fromRouterAdvertisement(datagram.bytes)))
            } catch {
                state.withLock { $0.refused += 1 }
            }
        }
    }

    private static func name(ofIndex index: UInt32) -> String? {
        guard index != 0 else { return nil }
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &name) != nil else { return nil }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
