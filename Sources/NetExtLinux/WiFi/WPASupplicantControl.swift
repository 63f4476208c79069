import CNetExtLinux
import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// wpa_supplicant's control interface for one network interface: a Unix datagram socket
/// `DIR/IFNAME` that takes one text command a datagram and answers in one (wpa_supplicant's
/// "Control interface" developer documentation; `wpa_cli` speaks it). NetExt uses it for what
/// the D-Bus API cannot say: which Hotspot 2.0 credentials are there and what they hold
/// (`LIST_CREDS`, `GET_CRED`; D-Bus can add and remove credentials but not list them).
///
/// wpa_supplicant answers the address a command came from, so the client socket is bound to a
/// path of its own (in a fresh private directory under /tmp, as `wpa_cli` binds one in /tmp),
/// removed when the client goes. Not an abstract name: those belong to a network namespace,
/// and wpa_supplicant may run in another (its answers would go nowhere). Commands carry
/// secrets (`SET_CRED … password`): they are never logged, and failures name the command's
/// first two words only.
final class WPASupplicantControl {
    let path: String
    private let fd: Int32
    private let clientDirectory: String

    /// Connects to the control socket of `interface` in `directory`; throws when none is there.
    init(directory: String, interface: String, timeoutMilliseconds: Int = 3_000) throws(HotspotConfigurationError) {
        path = directory + "/" + interface
        guard let (target, targetLength) = TCPSocket.unixAddress(path) else {
            throw .systemConfiguration("wpa_supplicant's control socket path \(path) is too long.")
        }
        var template = Array("/tmp/netext-wpa-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw .systemConfiguration("wpa_supplicant's control interface: no directory for the client socket (\(SystemError("mkdtemp", errno: errno))).")
        }
        clientDirectory = String(cString: made)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var timeout = timeval(tv_sec: timeoutMilliseconds / 1_000, tv_usec: (timeoutMilliseconds % 1_000) * 1_000)
        var remote = target
        var bound = false
        if fd >= 0, let (localAddress, localLength) = TCPSocket.unixAddress(clientDirectory + "/client") {
            var local = localAddress
            bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, localLength) } } == 0
        }
        let connected = bound && withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, targetLength) }
        } == 0
        guard connected else {
            let error = SystemError(bound ? "connect" : "bind", errno: errno, subject: bound ? path : clientDirectory)
            if fd >= 0 { close(fd) }
            Self.remove(clientDirectory)
            throw .systemConfiguration("wpa_supplicant's control interface for \(interface) cannot be reached: \(error).")
        }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
        Self.remove(clientDirectory)
    }

    private static func remove(_ directory: String) {
        unlink(directory + "/client")
        rmdir(directory)
    }

    /// Sends `command` and returns the answer. An answer of `FAIL` (or `UNKNOWN COMMAND`) throws,
    /// naming the command's first two words (never its value: it may be a password).
    @discardableResult
    func request(_ command: String) throws(HotspotConfigurationError) -> String {
        let words = command.split(separator: " ", maxSplits: 2).prefix(2).joined(separator: " ")
        let bytes = Array(command.utf8)
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else {
            throw .systemConfiguration("wpa_supplicant's control interface (\(path)) did not take \(words): \(SystemError("send", errno: errno)).")
        }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        // Unsolicited event messages ("<3>CTRL-EVENT-…") come only to attached clients; skip
        // any all the same. At most 8 datagrams and one timeout each: the loop is bounded.
        for _ in 0..<8 {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got < 0 {
                if errno == EINTR { continue }
                throw .systemConfiguration("wpa_supplicant did not answer \(words) within the timeout (\(SystemError("recv", errno: errno))).")
            }
            let answer = String(decoding: buffer[..<got], as: UTF8.self)
            if answer.hasPrefix("<") { continue }
            if answer == "FAIL\n" || answer.hasPrefix("UNKNOWN COMMAND") {
                throw .systemConfiguration("wpa_supplicant refused \(words).")
            }
            return answer
        }
        throw .systemConfiguration("wpa_supplicant sent no answer to \(words).")
    }

    /// The directory of `ctrl_interface` as wpa_supplicant reports it (D-Bus `CtrlInterface`):
    /// a path, or `DIR=path GROUP=group` (wpa_supplicant.conf(5)); nil when there is none.
    static func directory(fromCtrlInterface value: String) -> String? {
        let text = Substring(value.drop { $0 == " " })
        guard !text.isEmpty else { return nil }
        guard text.hasPrefix("DIR=") else { return String(text.prefix { $0 != " " }) }
        let directory = text.dropFirst(4).prefix { $0 != " " }
        return directory.isEmpty ? nil : String(directory)
    }
}
