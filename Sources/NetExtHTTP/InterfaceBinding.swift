import NetExtCore
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Binds a connection's socket to one network interface before it connects (`SO_BINDTODEVICE`,
/// socket(7)): its packets leave by that interface whatever the routing table says — a full
/// VPN's default route included — as Network.framework's `NWParameters.requiredInterface` and
/// a hotspot helper's `createTCPConnection` do on Apple's systems. Unprivileged since Linux 5.7
/// for a socket not yet bound to a device.
enum InterfaceBinding {
    /// `IFNAMSIZ`: an interface name and its NUL.
    typealias Name = (CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar, CChar)

    /// The option's value for `interface`; nil unless it is an interface name (`InterfaceName`).
    static func name(_ interface: String) -> Name? {
        guard InterfaceName.isValid(interface) else { return nil }
        let bytes = Array(interface.utf8)
        var name: Name = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &name) { buffer in buffer.copyBytes(from: bytes) }
        return name
    }

    /// Binds `channel` (before its connect) to `interface`; nil interface: nothing to do.
    static func bind(_ channel: any Channel, to interface: String?) -> EventLoopFuture<Void> {
        guard let interface else { return channel.eventLoop.makeSucceededVoidFuture() }
        guard let name = name(interface) else {
            return channel.eventLoop.makeFailedFuture(HTTPLoadError.invalidConfiguration("\"\(interface)\" is not an interface name"))
        }
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeFailedFuture(HTTPLoadError.invalidConfiguration("this connection cannot be bound to an interface"))
        }
        return provider.unsafeSetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_BINDTODEVICE), value: name
        ).flatMapErrorThrowing { error in
            throw HTTPLoadError.invalidConfiguration("cannot bind the connection to \(interface): \(error)")
        }
    }
}
