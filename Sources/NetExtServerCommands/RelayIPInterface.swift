import Foundation
import Logging
import MASQUERelay
import NetExtCore
import NetExtLinux
import NetExtTunnel
import Synchronization

/// connect-ip's way out of `netext-server relay`: a TUN interface holding the relay's address in
/// each pool (the pools' routes point into it), forwarding (and masquerading, when asked) from
/// `ServerForwarding`, and a thread that reads the packets the kernel routes into the interface
/// and hands them to the router. Clients' packets are written into it from the event loops (a TUN
/// write does not block: the kernel takes the packet or refuses it). Closing the descriptor, when
/// the thread ends, removes the interface.
final class RelayIPInterface: Sendable {
    let name: String
    private let fd: Int32
    private let running = Atomic<Bool>(true)
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let forwarding: Mutex<ServerForwarding>

    /// Creates the interface after `pattern` (`nxrelay%d`: the kernel numbers it), addresses it
    /// with `gateways` and brings it up with `mtu`; turns forwarding on and masquerades out of
    /// `masquerade`'s interfaces.
    init(pattern: String, gateways: [IPPrefix], mtu: Int, masquerade: [String], logger: Logger) throws(NetExtError) {
        let tun: (fd: Int32, name: String, offload: Bool)
        do { tun = try TunDevice.open(pattern: pattern, offload: false) } catch {
            throw NetExtError(.connectionFailed, "cannot create the relay's connect-ip interface: \(error)")
        }
        // Without an IPv6 pool the interface has no use for IPv6: off, so that the kernel sends no
        // router solicitations or MLD reports into it (the router would drop them as for nobody).
        if !gateways.contains(where: \.isIPv6) {
            try? "1\n".write(toFile: "/proc/sys/net/ipv6/conf/\(tun.name)/disable_ipv6", atomically: false, encoding: .utf8)
        }
        var commands: [[String]] = gateways.map { gateway in
            gateway.isIPv6
                ? ["-6", "address", "add", gateway.description, "dev", tun.name, "nodad"]
                : ["-4", "address", "add", gateway.description, "dev", tun.name]
        }
        commands.append(["link", "set", "dev", tun.name, "mtu", "\(mtu)", "up"])
        for command in commands {
            let result = CommandRunner.run(CommandRunner.ipPath, command)
            guard result.status == 0 else {
                close(tun.fd)
                throw NetExtError(.connectionFailed, "ip \(command.joined(separator: " ")) failed: \(result.output.trimmingCharacters(in: .whitespacesAndNewlines))")
            }
        }
        var forwarding = ServerForwarding(
            interface: tun.name, ipv4Pool: gateways.first { !$0.isIPv6 }?.network, ipv6Pool: gateways.first { $0.isIPv6 }?.network,
            forward: true, masquerade: masquerade)
        do { try forwarding.apply(logger: logger) } catch {
            forwarding.remove()
            close(tun.fd)
            throw error
        }
        name = tun.name
        fd = tun.fd
        self.forwarding = Mutex(forwarding)
    }

    /// Sends one packet into the network; false when the kernel refused it.
    func write(_ packet: UnsafeRawBufferPointer) -> Bool {
        Glibc.write(fd, packet.baseAddress, packet.count) == packet.count
    }

    /// Reads packets on a thread of its own until `stop`, each to `router`.
    func start(router: ConnectIPRouter, logger: Logger) {
        let fd = fd
        started.store(true, ordering: .releasing)
        Thread { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
            defer {
                buffer.deallocate()
                close(fd)
                finished.signal()
            }
            while running.load(ordering: .acquiring) {
                guard PacketIO.waitReadable(fd, milliseconds: 250) else { continue }
                let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    logger.error("relay: reading the connect-ip interface failed", metadata: ["errno": "\(errno)"])
                    return
                }
                router.fromNetwork(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }.start()
    }

    /// Stops the reader (which closes the interface) and puts forwarding back.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if started.load(ordering: .acquiring) { finished.wait() } else { close(fd) }
        forwarding.withLock { $0.remove() }
    }
}
