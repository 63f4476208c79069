import Glibc
import NetExtCore
import NIOCore
import NIOPosix

/// A target's addresses: an address literal at once, a name through the machine's resolver
/// (getaddrinfo on NIO's thread pool, so no event loop blocks). The policy is checked on the
/// addresses, not the name, so a name cannot lead the relay somewhere it may not go.
enum RelayResolver {
    static func resolve(_ host: String, on eventLoop: any EventLoop) -> EventLoopFuture<[[UInt8]]> {
        if let literal = IPPrefix.parseAddress(host) { return eventLoop.makeSucceededFuture([literal]) }
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { lookUp(host) }
    }

    private static func lookUp(_ host: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [[UInt8]] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            if let address = current.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin_addr) { addresses.append(Array($0)) }
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { addresses.append(Array($0)) }
                    }
                default: break
                }
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}
