#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's limit on open descriptors (RLIMIT_NOFILE).
public enum DescriptorLimit {
    /// Raises the soft limit to the hard limit (at most `ceiling`); returns the limits before
    /// and after. Many distributions start services with a soft limit of 1,024 while the hard
    /// limit is far higher.
    @discardableResult
    public static func raise(ceiling: UInt64 = 65536) -> (before: UInt64, after: UInt64) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (0, 0) }
        let before = UInt64(limit.rlim_cur)
        let wanted = min(UInt64(limit.rlim_max), ceiling)
        guard wanted > before else { return (before, before) }
        limit.rlim_cur = rlim_t(wanted)
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (before, before) }
        return (before, wanted)
    }
}
