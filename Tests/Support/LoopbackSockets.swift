import Glibc

/// Sockets on 127.0.0.1 for tests that need real TCP without a lab.
public enum LoopbackSockets {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Two connected TCP sockets on 127.0.0.1, blocking, with `timeoutSeconds` send and receive
    /// timeouts on both (so a stuck test fails instead of hanging).
    public static func connectedPair(timeoutSeconds: Int = 10) throws -> (near: Int32, far: Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(listener) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 4) == 0 else { throw Failure(description: "could not listen on 127.0.0.1 (errno \(errno))") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let near = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(near, $0, length) } }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }
        let far = accept(listener, nil, nil)
        guard far >= 0 else { throw Failure(description: "accept: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        for fd in [near, far] {
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        return (near, far)
    }
}
