import Foundation
import NetExt
import NetExtCore
import NetExtIPC

/// Decides whether a URL may load before any connection is made for it: the system's URL
/// filter (``SystemURLFilter``), or a stand-in in tests.
public protocol URLLoadFilter: Sendable {
    /// nil to let the load go; a sentence saying why not otherwise.
    func denial(of url: URL) async -> String?
}

/// The machine's URL filter (seed 004: a URL filter applies to every request made through the
/// system's HTTP API): each load, and each redirect's next hop, is asked of netextd's URL filter
/// (`URLFilter.check`) while one is running. netextd's status is read at most every
/// `statusInterval`, so that no question is asked while no filter runs; without netextd nothing
/// is filtered (no filter can run without it).
public actor SystemURLFilter: URLLoadFilter {
    private let appIdentifier: String
    private let socketPath: String
    private let statusInterval: Duration
    private var client: ControlClient?
    private var running = false
    private var checkedAt: ContinuousClock.Instant?

    public init(appIdentifier: String = "com.netext.http", socketPath: String = ControlClient.defaultSocketPath, statusInterval: Duration = .seconds(5)) {
        self.appIdentifier = appIdentifier
        self.socketPath = socketPath
        self.statusInterval = statusInterval
    }

    public func denial(of url: URL) async -> String? {
        let now = ContinuousClock.now
        if checkedAt.map({ now - $0 >= statusInterval }) ?? true {
            checkedAt = now
            running = await filterRunning()
        }
        guard running, let client else { return nil }
        do {
            let result = try await URLFilter.check(url.absoluteString, client: client)
            return result.effective == .deny ? (result.verdict == .deny ? "the URL filter denies it" : "the URL filter could not decide and fails closed") : nil
        } catch {
            // netextd went away mid-question: asked again at the next status read.
            self.client = nil
            checkedAt = nil
            return nil
        }
    }

    private func filterRunning() async -> Bool {
        if client == nil {
            guard FileManager.default.fileExists(atPath: socketPath) else { return false }
            client = try? await ControlClient.connect(appIdentifier: appIdentifier, socketPath: socketPath, timeout: .seconds(2))
        }
        guard let client else { return false }
        do {
            return try await client.call(GetURLFilterStatus()).state != .off
        } catch {
            client.close()
            self.client = nil
            return false
        }
    }
}
