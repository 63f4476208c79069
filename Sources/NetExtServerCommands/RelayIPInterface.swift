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

    /// Reads packets on a thread of its own until `stop` and hands them to `router` in batches:
    /// once the interface is readable, everything it holds (up to ``batchSize`` packets, read
    /// without waiting), so that a stream's packets leave in one write.
    func start(router: ConnectIPRouter, logger: Logger) {
        let fd = fd
        // Reads return at once when the interface holds nothing more (EAGAIN): the batch ends
        // there. (Writes into a TUN interface never wait either way.)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        started.store(true, ordering: .releasing)
        Thread { [self] in
            let slot = 65_536
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: slot * Self.batchSize, alignment: 16)
            var packets: [UnsafeRawBufferPointer] = []
            packets.reserveCapacity(Self.batchSize)
            defer {
                buffer.deallocate()
                close(fd)
                finished.signal()
            }
            while running.load(ordering: .acquiring) {
                guard PacketIO.waitReadable(fd, milliseconds: 250) else { continue }
                packets.removeAll(keepingCapacity: true)
                while packets.count < Self.batchSize {
                    let start = buffer.baseAddress! + packets.count * slot
                    let count = Glibc.read(fd, start, slot)
                    if count > 0 {
                        packets.append(UnsafeRawBufferPointer(start: start, count: count))
                        continue
                    }
                    if count < 0 && errno != EINTR && errno != EAGAIN {
                        logger.error("relay: reading the connect-ip interface failed", metadata: ["errno": "\(errno)"])
                        return
                    }
                    break
                }
                if !packets.isEmpty { router.fromNetwork(packets) }
            }
        }.start()
    }

    /// The most packets handed to the router at once.
    static let batchSize = 32

    /// Stops the reader (which closes the interface) and puts forwarding back.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if started.load(ordering: .acquiring) { finished.wait() } else { close(fd) }
        forwarding.withLock { $0.remove() }
    }
}
