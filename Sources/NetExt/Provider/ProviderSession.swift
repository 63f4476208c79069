import Foundation
import NetExtCore
import NetExtIPC
import NetExtTransport
import Synchronization

/// A provider's live link to netextd: sends messages and matches netextd's answers to the one
/// outstanding settings request (network settings of a tunnel, or a filter's kernel rules).
final class ProviderSession: Sendable {
    let connection: FramedConnection
    /// Where netextd passes descriptors (the TUN device) or, for a filter data provider, the
    /// flow channel: descriptor 4 in a provider process.
    let descriptorSocket: Int32
    private let pendingSettings = Mutex<CheckedContinuation<ProviderMessage, Never>?>(nil)
    private let finished = Mutex(false)

    init(connection: FramedConnection, descriptorSocket: Int32) {
        self.connection = connection
        self.descriptorSocket = descriptorSocket
    }

    func send(_ message: ProviderMessage) async throws(NetExtError) {
        do { try await connection.send(message) } catch {
            throw NetExtError(.daemonUnavailable, "netextd closed the provider connection")
        }
    }

    /// Sends a settings request and waits for netextd's answer.
    func requestSettings(_ settings: PacketTunnelNetworkSettings?) async throws(NetExtError) -> ProviderMessage {
        await request(.setNetworkSettings(settings), busy: "another setTunnelNetworkSettings call is still in progress") { .networkSettingsRefused($0) }
    }

    /// Sends a transparent proxy's network rules and waits for netextd's answer.
    func requestTransparentProxySettings(_ settings: TransparentProxyNetworkSettings?) async -> ProviderMessage {
        await request(.setTransparentProxySettings(settings), busy: "another setTransparentProxySettings call is still in progress") { .networkSettingsRefused($0) }
    }

    /// Sends a filter's kernel rules and waits for netextd's answer.
    func requestFilterSettings(_ settings: FilterSettings?) async -> ProviderMessage {
        await request(.applyFilterSettings(settings), busy: "another apply(settings) call is still in progress") { .filterSettingsRefused($0) }
    }

    /// Sends `message` and waits for the answer `answer(_:)` delivers; one request at a time.
    private func request(_ message: ProviderMessage, busy: String, refusal: @escaping @Sendable (NetExtError) -> ProviderMessage) async -> ProviderMessage {
        await withCheckedContinuation { (continuation: CheckedContinuation<ProviderMessage, Never>) in
            let isBusy = pendingSettings.withLock { pending in
                if pending != nil { return true }
                pending = continuation
                return false
            }
            if isBusy {
                continuation.resume(returning: refusal(NetExtError(.configurationInvalid, busy)))
                return
            }
            Task {
                do throws(NetExtError) { try await self.send(message) } catch {
                    self.answer(refusal(error))
                }
            }
        }
    }

    /// Delivers netextd's answer to the waiting settings request.
    func answer(_ message: ProviderMessage) {
        let continuation = pendingSettings.withLock { pending in
            defer { pending = nil }
            return pending
        }
        continuation?.resume(returning: message)
    }

    /// Marks the session as ended on purpose (stopped or failed) and closes it.
    func finish() {
        finished.withLock { $0 = true }
        connection.close()
    }

    var isFinished: Bool { finished.withLock { $0 } }
}
