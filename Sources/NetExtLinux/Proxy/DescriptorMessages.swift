import CNetExtLinux

/// Messages that carry a descriptor (SCM_RIGHTS) on a sequenced-packet socket: how netextd hands
/// an accepted flow socket to an app proxy provider together with what it knows of the flow.
public enum DescriptorMessages {
    /// Sends `bytes` as one message with `descriptor` attached (nil: none). The caller keeps
    /// its own copy of the descriptor and closes it when it no longer needs it.
    public static func send(_ bytes: [UInt8], descriptor: Int32?, over socket: Int32) throws(SystemError) {
        let result = bytes.withUnsafeBytes { netext_send_fd_message(socket, descriptor ?? -1, $0.baseAddress, $0.count) }
        guard result == 0 else { throw SystemError("sendmsg SCM_RIGHTS", errno: -result) }
    }

    /// Receives one message into `buffer` (blocking): its length (0 when the peer closed) and
    /// the descriptor attached to it, if any (close-on-exec; the caller owns it).
    public static func receive(into buffer: UnsafeMutableRawBufferPointer, over socket: Int32) throws(SystemError) -> (length: Int, descriptor: Int32?) {
        var fd: Int32 = -1
        let result = netext_receive_fd_message(socket, buffer.baseAddress, buffer.count, &fd)
        guard result >= 0 else { throw SystemError("recvmsg SCM_RIGHTS", errno: Int32(-result)) }
        return (Int(result), fd >= 0 ? fd : nil)
    }
}
