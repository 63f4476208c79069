import CNetExtLinux
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TUN interface (`/dev/net/tun`, `IFF_TUN | IFF_NO_PI`): each read returns one IP packet and
/// each write sends one. The interface exists while a descriptor to it is open.
public enum TunDevice {
    /// Creates a TUN interface named after `pattern` (`netext%d` lets the kernel number it) and
    /// returns its descriptor and actual name.
    public static func open(pattern: String = "netext%d") throws(SystemError) -> (fd: Int32, name: String) {
        var name = [CChar](repeating: 0, count: 16)
        for (index, byte) in pattern.utf8.prefix(15).enumerated() { name[index] = CChar(bitPattern: byte) }
        let fd = netext_tun_open(&name)
        guard fd >= 0 else { throw SystemError("open TUN", errno: -fd, subject: pattern) }
        let actual = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (fd, actual)
    }

    /// The MTU of any interface, from sysfs.
    public static func mtu(of interface: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/sys/class/net/\(interface)/mtu", encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Blocking packet I/O on a descriptor (TUN or a connected datagram socket), for data-plane threads.
public enum PacketIO {
    /// Reads one packet into `buffer`; returns its length, 0 at end of file, or throws.
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
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
            if errno != EINTR { throw SystemError("write", errno: errno) }
        }
    }
}
