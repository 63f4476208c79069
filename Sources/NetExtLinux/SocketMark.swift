#if canImport(Glibc)
import Glibc
#endif

/// Gives socket `fd` the mark `mark` (`SO_MARK`, needs CAP_NET_ADMIN): policy rules on the mark
/// choose its route. Set before `connect`, the route and the source address follow it. Returns
/// whether the kernel took it.
func setSocketMark(_ fd: Int32, _ mark: UInt32) -> Bool {
    var value = mark
    return setsockopt(fd, SOL_SOCKET, SO_MARK, &value, socklen_t(MemoryLayout<UInt32>.size)) == 0
}
