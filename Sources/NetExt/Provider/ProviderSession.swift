import Foundation
import NetExtCore
import NetExtIPC
import Synchronization

/// A provider's live link to netextd: sends messages and matches netextd's answers to the one
/// outstanding network-settings request.
final class ProviderSession: Sendable {
    let connection: FramedConnection
    private let pendingSettings = Mutex<CheckedContinuation<ProviderMessage, Never>?>(nil)
    private let finished = Mutex(false)

    init(connection: FramedConnection) {
        self.connection = connection
    }

    func send(_ message: ProviderMessage) async throws(NetExtError) {
        do { try await connection.send(message) } catch {
            throw NetExtError(.daemonUnavailable, "netextd closed the provider connection")
        }
    }

    /// Sends a settings request and waits for netextd's answer.
    func requestSettings(_ settings: PacketTunnelNetworkSettings?) async throws(NetExtError) -> ProviderMessage {
        let answer = await withCheckedContinuation { (continuation: CheckedContinuation<ProviderMessage, Never>) in
            let busy = pendingSettings.withLock { pending in
                if pending != nil { return true }
                pending = continuation
                return false
            }
            if busy {
                continuation.resume(returning: .networkSettingsRefused(NetExtError(.configurationInvalid, "another setTunnelNetworkSettings call is still in progress")))
                return
            }
            Task {
                do throws(NetExtError) { try await self.send(.setNetworkSettings(settings)) } catch {
                    self.answer(.networkSettingsRefused(error))
                }
            }
        }
        return answer
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
