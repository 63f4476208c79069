import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Tells when cgroups appear or disappear anywhere in the cgroup v2 hierarchy: inotify(7) on
/// every directory of the tree (inotify does not recurse; a new directory gets a watch of its
/// own as soon as its creation is read, and its children at that moment are reported too). Calls
/// back after each burst of changes (a 100 ms quiet), on a thread of its own.
public final class CgroupWatcher: Sendable {
    private let running = Mutex(false)
    /// The most directories watched (each costs the kernel about 1 KiB); beyond it, new cgroups
    /// are still reported when their parent is watched.
    public static let maximumWatches = 20_000

    public init() {}

    /// Starts watching the tree at `root`; false if inotify is unavailable.
    @discardableResult
    public func start(root: String, onChange: @escaping @Sendable () -> Void) -> Bool {
        let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { return false }
        running.withLock { $0 = true }
        Thread.detachNewThread {
            var watches: [Int32: String] = [:]
            let mask = UInt32(IN_CREATE | IN_DELETE | IN_ONLYDIR | IN_DONT_FOLLOW)
            func watch(_ directory: String) {
                var pending = [directory]
                while let next = pending.popLast(), watches.count < Self.maximumWatches {
                    let wd = inotify_add_watch(fd, next, mask)
                    guard wd >= 0 else { continue }
                    watches[wd] = next
                    pending += CgroupTree.subdirectories(of: next).map { next + "/" + $0 }
                }
            }
            watch(root)
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var changed = false
            while self.running.withLock({ $0 }) {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 100)
                if ready <= 0 {
                    if changed {
                        changed = false
                        onChange()
                    }
                    continue
                }
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard count > 0 else { continue }
                var offset = 0
                // struct inotify_event: int wd; uint32 mask, cookie, len; char name[len].
                while offset + 16 <= count {
                    let (wd, eventMask, length) = buffer.withUnsafeBytes { bytes in
                        (bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                         bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                         Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                    }
                    let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)]
                    let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    offset += 16 + length
                    if eventMask & UInt32(IN_IGNORED) != 0 { watches[wd] = nil; continue }
                    guard eventMask & UInt32(IN_ISDIR) != 0, let parent = watches[wd], !name.isEmpty else { continue }
                    changed = true
                    if eventMask & UInt32(IN_CREATE) != 0 { watch(parent + "/" + name) }
                }
            }
            close(fd)
        }
        return true
    }

    /// Stops after the current wait (at most 100 ms).
    public func stop() { running.withLock { $0 = false } }
}
