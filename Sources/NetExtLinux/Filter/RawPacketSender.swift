import CNetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// Sends whole IP packets built in user space (headers included), IPv4 and IPv6. Needs root.
public final class RawPacketSender: Sendable {
    private let ipv4: Int32
    private let ipv6: Int32

    public init() throws(SystemError) {
        let four = netext_raw_open(0)
        guard four >= 0 else { throw SystemError("socket(AF_INET, SOCK_RAW)", errno: -four) }
        let six = netext_raw_open(1)
        guard six >= 0 else {
            Glibc.close(four)
            throw SystemError("socket(AF_INET6, SOCK_RAW)", errno: -six)
        }
        ipv4 = four
        ipv6 = six
    }

    /// Sends `packet` to the destination in its own header.
    public func send(_ packet: [UInt8]) throws(SystemError) {
        guard let first = packet.first else { throw SystemError("raw send", errno: EINVAL) }
        let fd = first >> 4 == 6 ? ipv6 : ipv4
        let result = packet.withUnsafeBufferPointer { netext_raw_send(fd, $0.baseAddress, UInt($0.count)) }
        guard result >= 0 else { throw SystemError("raw send", errno: Int32(-result)) }
    }

    deinit {
        Glibc.close(ipv4)
        Glibc.close(ipv6)
    }
}
