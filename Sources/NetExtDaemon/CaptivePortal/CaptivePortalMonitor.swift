import Foundation
import Logging
import NetExtCore
import NetExtLinux

/// Captive portal detection by itself: on each burst of network changes (and at start) the
/// default route's interface is checked — again at once if it changed, otherwise at most every
/// `minimumInterval` — and, while it is captive, every `captiveRecheck`, so that a login is seen.
/// A Router Advertisement nobody asked for that announces something new for its interface (a
/// captive portal API, another one, or none any more: RFC 8910 §2.3) starts a check at once.
/// The verdict's changes are logged; `status()` answers `netext hotspot status`. Detections made
/// on request for the same interface refresh it too.
actor CaptivePortalMonitor {
    private let detector: CaptivePortalDetector
    private let observer: (any NetworkObserving)?
    private let guardInForce: @Sendable () async -> Bool
    private let logger: Logger
    private let captiveRecheck: Duration
    private let minimumInterval: TimeInterval = 5
    private var last: CaptivePortalDetection?
    private var checkedAt: Date?
    private var checking = false
    private var pending = false
    private var recheck: Task<Void, Never>?
    /// Every detection remembered, in order (the hotspot helpers' service reads them).
    nonisolated let detections: AsyncStream<CaptivePortalDetection>
    private let detectionsSink: AsyncStream<CaptivePortalDetection>.Continuation
    /// Told when a network found captive is found open on the same interface.
    private var opened: (@Sendable () async -> Void)?
    /// Router Advertisements read while monitoring, and what each interface's last one announced.
    private let advertisements: RouterAdvertisementWatcher?
    private var announced: [String: CaptivePortalAnnouncement?] = [:]

    /// `observer` nil: no monitoring, only detections on request are recorded.
    init(detector: CaptivePortalDetector, observer: (any NetworkObserving)?, captiveRecheck: Duration, guardInForce: @escaping @Sendable () async -> Bool, logger: Logger) {
        self.detector = detector
        self.observer = observer
        self.captiveRecheck = captiveRecheck
        self.guardInForce = guardInForce
        self.logger = logger
        advertisements = observer == nil ? nil : RouterAdvertisementWatcher()
        (detections, detectionsSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(16))
    }

    func start() {
        guard let observer else { return }
        observer.start { [weak self] in Task { await self?.check(forced: false) } }
        do throws(SystemError) {
            try advertisements?.start { [weak self] advertisement in Task { await self?.advertised(advertisement) } }
        } catch {
            logger.warning("captive portal: Router Advertisements cannot be watched; network changes still start checks", metadata: ["error": "\(error)"])
        }
        Task { await check(forced: true) }
    }

    /// A Router Advertisement arrived: a check when it announces something new for its interface.
    private func advertised(_ advertisement: RouterAdvertisementWatcher.Advertisement) async {
        let previous = announced[advertisement.interface]
        announced[advertisement.interface] = .some(advertisement.announcement)
        if let previous, previous == advertisement.announcement { return }
        logger.info("captive portal: a Router Advertisement announces something new; checking", metadata: [
            "interface": "\(advertisement.interface)", "announcement": "\(advertisement.announcement?.description ?? "none")",
        ])
        await check(forced: true)
    }

    /// Sets what is told when a captive network opens (on-demand's retry).
    func whenOpened(_ body: @escaping @Sendable () async -> Void) {
        opened = body
    }

    func stop() {
        observer?.stop()
        advertisements?.stop()
        recheck?.cancel()
        detectionsSink.finish()
    }

    func status() -> CaptivePortalStatus {
        CaptivePortalStatus(monitoring: observer != nil, last: last, checkedAt: checkedAt)
    }

    /// A detection made on request: kept when it is about the default route's interface.
    func record(_ detection: CaptivePortalDetection, primaryInterface: String?) {
        guard detection.interface == primaryInterface else { return }
        remember(detection)
    }

    private func check(forced: Bool) async {
        if checking {
            pending = true
            return
        }
        checking = true
        defer { checking = false }
        repeat {
            pending = false
            guard let interface = await BlockingWork.run({ NetworkInterfaces.defaultRouteInterface() }) else { continue }
            if !forced, let checkedAt, last?.interface == interface, Date().timeIntervalSince(checkedAt) < minimumInterval, last?.verdict != .captive { continue }
            let detection = await detector.detect(interface: interface, probe: nil, guardInForce: await guardInForce())
            remember(detection)
        } while pending
    }

    private func remember(_ detection: CaptivePortalDetection) {
        let previous = last
        last = detection
        checkedAt = Date()
        detectionsSink.yield(detection)
        if previous?.verdict != detection.verdict || previous?.interface != detection.interface {
            switch detection.verdict {
            case .captive:
                logger.notice("captive portal detected", metadata: [
                    "interface": "\(detection.interface)", "login": "\(detection.loginURL?.absoluteString ?? "unknown")",
                ])
            case .open:
                logger.notice("network open", metadata: ["interface": "\(detection.interface)"])
                if previous?.verdict == .captive, previous?.interface == detection.interface, let opened {
                    Task { await opened() }
                }
            case .unknown:
                logger.info("captive portal: nothing could tell", metadata: ["interface": "\(detection.interface)"])
            }
        }
        recheck?.cancel()
        guard observer != nil, detection.verdict == .captive else { return }
        let wait = captiveRecheck
        recheck = Task { [weak self] in
            try? await Task.sleep(for: wait)
            guard !Task.isCancelled else { return }
            await self?.check(forced: true)
        }
    }
}
