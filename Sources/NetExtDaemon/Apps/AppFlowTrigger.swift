import Foundation
import NetExtCore
import NetExtLinux
import Synchronization

/// The real opener of per-app on demand's log groups: a netfilter log subscription read on a
/// thread of its own, calling back once per burst of logged packets (the packets themselves are
/// not looked at: that one arrived is the news).
enum AppFlowTrigger {
    private final class Running: Sendable {
        let flag = Atomic<Bool>(true)
    }

    static let opener: AppSteeringController.TriggerOpener = open(group:onFlow:)

    static func open(group: UInt16, onFlow: @escaping @Sendable () -> Void) throws(NetExtError) -> @Sendable () -> Void {
        let log: NetfilterLog
        do { log = try NetfilterLog(group: group, copyRange: 128) } catch {
            throw NetExtError(.connectionFailed, "cannot subscribe to netfilter log group \(group): \(error)")
        }
        let running = Running()
        Thread.detachNewThread {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
            defer {
                buffer.deallocate()
                log.close()
            }
            while running.flag.load(ordering: .acquiring) {
                guard log.waitReadable(milliseconds: 200) else { continue }
                var seen = 0
                log.drain(into: buffer) { _ in seen += 1 }
                if seen > 0 { onFlow() }
            }
        }
        return { running.flag.store(false, ordering: .releasing) }
    }
}
