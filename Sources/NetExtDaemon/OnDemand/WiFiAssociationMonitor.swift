import Foundation
import Logging
import NetExtCore
import NetExtLinux

/// Watches which network each Wi-Fi interface has joined and tells its subscribers each change
/// (`WiFiAssociationChange`): on-demand evaluates its rules at once (`SSIDMatch`), the hotspot
/// helpers are handed the network. It hears the Wi-Fi service's signals where the service sends
/// them (NetworkManager's device state, wpa_supplicant's interface state) and reads the joined
/// networks again on each; it also reads them every `pollInterval`, in case a signal was missed
/// or the service signals nothing, and starts the watch again when the service went away.
actor WiFiAssociationMonitor {
    /// How a reading came about, for the log.
    enum Cause: String, Sendable {
        case start, signal, poll
    }

    private let wifi: MachineWiFiService
    private let logger: Logger
    private let pollInterval: Duration
    private var associations = WiFiAssociations()
    private var watch: (any WiFiAssociationWatch)?
    private var subscribers: [UUID: AsyncStream<WiFiAssociationChange>.Continuation] = [:]
    private var tasks: [Task<Void, Never>] = []
    /// Wake-ups: a burst of signals while a reading is under way comes to one more reading.
    private let wakeups: AsyncStream<Cause>
    private let wake: AsyncStream<Cause>.Continuation
    /// Readings taken, by cause (tests and the log).
    private(set) var readings: [Cause: Int] = [:]

    init(wifi: MachineWiFiService, logger: Logger, pollInterval: Duration = .seconds(10)) {
        self.wifi = wifi
        self.logger = logger
        self.pollInterval = pollInterval
        (wakeups, wake) = AsyncStream.makeStream(of: Cause.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The changes from now on (the joined networks as first read count as joins).
    func subscribe() -> AsyncStream<WiFiAssociationChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: WiFiAssociationChange.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        subscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(id) } }
        return stream
    }

    /// The networks joined as last read.
    var joined: [String: WiFiScanResult] { associations.joined }

    /// Reads the joined networks now, then after each signal and every `pollInterval`.
    func start() {
        guard tasks.isEmpty else { return }
        wake.yield(.start)
        let wakeups = self.wakeups, wake = self.wake, interval = pollInterval
        tasks.append(Task { [weak self] in
            for await cause in wakeups {
                guard let self, !Task.isCancelled else { return }
                await self.read(cause)
            }
        })
        tasks.append(Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                wake.yield(.poll)
            }
        })
    }

    /// Ends the watch and the readings; subscribers' streams finish.
    func stop() {
        for task in tasks { task.cancel() }
        tasks = []
        wake.finish()
        watch?.stop()
        watch = nil
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
    }

    private func unsubscribe(_ id: UUID) {
        subscribers[id] = nil
    }

    private func read(_ cause: Cause) async {
        readings[cause, default: 0] += 1
        let wifi = self.wifi, wake = self.wake
        let needsWatch = !(watch?.isWatching ?? false)
        let (reading, started) = await BlockingWork.run { () -> (Result<[String: WiFiScanResult], HotspotConfigurationError>, (any WiFiAssociationWatch)?) in
            // The watch first, so that no change between the reading and the watch goes unheard.
            let started = needsWatch ? (try? wifi.watchAssociations { wake.yield(.signal) }) ?? nil : nil
            return (Result { () throws(HotspotConfigurationError) in try wifi.associations() }, started)
        }
        if let started {
            watch?.stop()
            watch = started
            logger.info("hearing the Wi-Fi service's association signals")
        }
        guard case .success(let now) = reading else { return }
        for change in associations.update(now) {
            var metadata: Logger.Metadata = ["interface": "\(change.interface)", "by": "\(cause.rawValue)"]
            switch change {
            case .joined(let network):
                metadata["ssid"] = "\(network.ssid)"
                metadata["bssid"] = "\(network.bssid)"
                logger.notice("Wi-Fi network joined", metadata: metadata)
            case .left(_, let ssid):
                metadata["ssid"] = "\(ssid)"
                logger.notice("Wi-Fi network left", metadata: metadata)
            }
            for continuation in subscribers.values { continuation.yield(change) }
        }
    }
}
