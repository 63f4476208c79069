import Foundation
import NetExtCore
import NetExtIPC

/// A URL filter's control provider (extension point `url-filter-control`), as Apple's
/// `NEURLFilterControlProvider`: netextd calls `fetchPrefilter()` when the filter is enabled and
/// every `prefilterFetchInterval` after, validates what it returns and swaps it in atomically.
/// The provider may use the network (it downloads the prefilter); it never sees a URL checked.
public protocol URLFilterControlProvider: AnyObject, Sendable {
    /// Called once before the first fetch.
    func start(configuration: Configuration) async throws
    /// Called when the filter goes off; the process exits after it returns.
    func stop(reason: ProviderStopReason) async
    /// The current prefilter, or nil to keep the one netextd has.
    func fetchPrefilter() async throws -> URLFilterPrefilter?
}

extension URLFilterControlProvider {
    public func start(configuration: Configuration) async throws {}
    public func stop(reason: ProviderStopReason) async {}
}
