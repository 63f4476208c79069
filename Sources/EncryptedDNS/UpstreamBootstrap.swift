import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// How an upstream's TCP connection is opened: 3 s to connect, no Nagle delay (queries are
/// small and waited for), and the socket's mark when one is given (`SO_MARK` needs
/// CAP_NET_ADMIN, so none is set without one).
enum UpstreamBootstrap {
    static func make(on eventLoop: any EventLoop, mark: UInt32?) -> ClientBootstrap {
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(3))
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        guard let mark else { return bootstrap }
        return bootstrap.channelOption(.socketOption(NIOBSDSocket.Option(rawValue: SO_MARK)), value: SocketOptionValue(Int32(bitPattern: mark)))
    }
}
