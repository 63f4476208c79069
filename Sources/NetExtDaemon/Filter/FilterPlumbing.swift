import Foundation
import NetExtCore
import NetExtLinux

/// The kernel side of the content filter, behind one seam: the netfilter queue that brings
/// steered packets to the engine, the log of DNS answers, the raw socket for block pages and
/// resets, the steering rules, and the rules directory. netextd uses `KernelFilterPlumbing`;
/// NetExtTesting's `SimulatedFilterKernel` runs the same engine over packets a test sends,
/// steered by `FilterSteering.outcome` instead of iptables.
public protocol FilterPlumbing: Sendable {
    /// Whether netextd must be root to use it (the kernel's queue, rules and sandbox).
    var needsRoot: Bool { get }
    /// Binds queue `number`; with `failOpen` packets pass while no reader is bound.
    func openQueue(number: UInt16, failOpen: Bool) throws(NetExtError) -> any FilterPacketQueue
    /// Subscribes to copies of DNS answers (the steering's log group `group`).
    func openDNSLog(group: UInt16) throws(NetExtError) -> any FilterDNSLog
    /// Something that sends whole IP packets (block pages, resets).
    func makeInjector() throws(NetExtError) -> any FilterPacketInjector
    /// Replaces any earlier steering with `steering`; on failure nothing of it stays.
    func installSteering(_ steering: FilterSteering) throws(NetExtError)
    /// Changes the installed steering in one step (no moment without rules).
    func updateSteering(_ steering: FilterSteering) throws(NetExtError)
    /// Removes every steering rule (harmless when there are none).
    func removeSteering()
    /// Creates `directory` (a data provider's rules) under `root`: readable by everyone,
    /// writable only by `owner` (nil: root), so the data provider reads it and cannot change it.
    func prepareRulesDirectory(_ directory: String, under root: String, owner: UserDatabase.User?) throws(NetExtError)
}

/// Where steered packets wait for the engine's verdicts.
public protocol FilterPacketQueue: Sendable {
    /// Receives what is queued (blocking up to `timeoutMilliseconds`) and calls `handle` for
    /// each packet; returns the number of malformed messages skipped; throws once closed.
    func receive(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32, _ handle: (NetfilterQueue.Packet) -> Void) throws(SystemError) -> Int
    /// The verdict on one queued packet. Safe from any thread.
    func setVerdict(_ verdict: NetfilterQueue.Verdict, for id: UInt32) throws(SystemError)
    func close()
}

/// Copies of DNS answers arriving, for names of flows that carry none.
public protocol FilterDNSLog: Sendable {
    /// Calls `handle` with each IP packet logged since the last call; returns at once when
    /// nothing waits. Returns the number of malformed messages skipped.
    func drain(into buffer: UnsafeMutableRawBufferPointer, _ handle: (UnsafeRawBufferPointer) -> Void) -> Int
    func close()
}

/// Sends whole IP packets as if they came from the network or this machine.
public protocol FilterPacketInjector: Sendable {
    func send(_ packet: [UInt8]) throws(SystemError)
}

extension NetfilterQueue: FilterPacketQueue {}
extension NetfilterLog: FilterDNSLog {}
extension RawPacketSender: FilterPacketInjector {}

/// netextd's filter plumbing: nfnetlink queue and log, a raw socket, iptables-nft steering.
public struct KernelFilterPlumbing: FilterPlumbing {
    private let steering = FilterSteeringApplier()

    public init() {}

    public var needsRoot: Bool { true }

    public func openQueue(number: UInt16, failOpen: Bool) throws(NetExtError) -> any FilterPacketQueue {
        do { return try NetfilterQueue(number: number, failOpen: failOpen) } catch {
            throw NetExtError(.connectionFailed, "cannot bind netfilter queue \(number): \(error)")
        }
    }

    public func openDNSLog(group: UInt16) throws(NetExtError) -> any FilterDNSLog {
        do { return try NetfilterLog(group: group) } catch {
            throw NetExtError(.connectionFailed, "cannot subscribe to netfilter log group \(group): \(error)")
        }
    }

    public func makeInjector() throws(NetExtError) -> any FilterPacketInjector {
        do { return try RawPacketSender() } catch {
            throw NetExtError(.connectionFailed, "cannot open a raw socket: \(error)")
        }
    }

    public func installSteering(_ steering: FilterSteering) throws(NetExtError) { try self.steering.apply(steering) }
    public func updateSteering(_ steering: FilterSteering) throws(NetExtError) { try self.steering.update(steering) }
    public func removeSteering() { steering.remove() }

    public func prepareRulesDirectory(_ directory: String, under root: String, owner: UserDatabase.User?) throws(NetExtError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root)
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o755, .ownerAccountID: NSNumber(value: owner?.uid ?? 0), .groupOwnerAccountID: NSNumber(value: owner?.gid ?? 0)],
                ofItemAtPath: directory)
        } catch {
            throw NetExtError.readWrite("cannot prepare the filter rules directory \(directory): \(error.localizedDescription)")
        }
    }
}
