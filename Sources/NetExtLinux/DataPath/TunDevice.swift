import CNetExtLinux
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TUN interface (`/dev/net/tun`, `IFF_TUN | IFF_NO_PI`): each read returns one IP packet and
/// each write sends one. The interface exists while a descriptor to it is open.
///
/// With offloads (`IFF_VNET_HDR` and TSO), every packet is preceded by a `VirtioNetHeader` and a
/// read may return a TCP segment of up to 64 KiB; `TunPacketReader` and `TunPacketWriter`
/// handle both kinds of descriptor.
public enum TunDevice {
    /// Creates a TUN interface named after `pattern` (`netext%d` lets the kernel number it) and
    /// returns its descriptor, actual name, and whether offloads are on. With `offload`, a
    /// kernel that refuses them gets a plain interface instead.
    public static func open(pattern: String = "netext%d", offload: Bool = true) throws(SystemError) -> (fd: Int32, name: String, offload: Bool) {
        func attempt(_ offload: Bool) -> (Int32, [CChar]) {
            var name = [CChar](repeating: 0, count: 16)
            for (index, byte) in pattern.utf8.prefix(15).enumerated() { name[index] = CChar(bitPattern: byte) }
            return (netext_tun_open(&name, offload ? 1 : 0), name)
        }
        var useOffload = offload
        var (fd, name) = attempt(useOffload)
        if fd < 0 && useOffload && fd != -EPERM && fd != -EBUSY {
            useOffload = false
            (fd, name) = attempt(false)
        }
        guard fd >= 0 else { throw SystemError("open TUN", errno: -fd, subject: pattern) }
        let actual = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (fd, actual, useOffload)
    }

    /// Whether a TUN descriptor (perhaps received from another process) carries virtio headers.
    public static func hasVirtioHeader(_ fd: Int32) -> Bool {
        netext_tun_has_vnet_header(fd) == 1
    }

    /// Bytes the kernel counted on an interface (sysfs statistics): `received` is what arrived
    /// from the device (for a TUN interface, what the provider wrote: traffic in from the tunnel),
    /// `sent` what the system sent into it.
    public static func traffic(of interface: String) -> (received: UInt64, sent: UInt64)? {
        func counter(_ name: String) -> UInt64? {
            guard let text = try? String(contentsOfFile: "/sys/class/net/\(interface)/statistics/\(name)", encoding: .utf8) else { return nil }
            return UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        guard let received = counter("rx_bytes"), let sent = counter("tx_bytes") else { return nil }
        return (received, sent)
    }

    /// The MTU of any interface, from sysfs.
    public static func mtu(of interface: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/sys/class/net/\(interface)/mtu", encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Blocking packet I/O on a descriptor (TUN or a connected datagram socket), for data-plane threads.
public enum PacketIO {
    /// Reads one packet into `buffer`; returns its length, 0 at end of file, or throws. Waits
    /// on a non-blocking descriptor.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno == EAGAIN {
                _ = waitReadable(fd, milliseconds: -1)
                continue
            }
            if errno != EINTR { throw SystemError("read", errno: errno) }
        }
    }

    /// Waits up to `milliseconds` for the descriptor to become readable.
    public static func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }

    /// Writes one packet; throws on failure.
    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        while true {
            let count = Glibc.write(fd, bytes.baseAddress, bytes.count)
            if count >= 0 { return }
            if errno == EAGAIN {
                _ = waitWritable(fd, milliseconds: 100)
                continue
            }
            if errno != EINTR { throw SystemError("write", errno: errno) }
        }
    }

    /// Waits up to `milliseconds` for the descriptor to accept a write.
    public static func waitWritable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return poll(&poller, 1, milliseconds) > 0
    }
}
