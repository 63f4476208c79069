// A tiny provider that proves netextd's launch → hello → start → stop cycle. Its behaviour is
// steered by the configuration's providerConfiguration, so tests can make it misbehave:
//   "startDelay": seconds to wait in startTunnel
//   "failStart": an error message startTunnel throws
//   "crashAfterStart": exit(3) right after reporting started
//   "ignoreStop": never acknowledge stop (netextd must terminate it)
//   "requirePassword": fail unless this password was supplied
// handleAppMessage answers "echo: <message>"; the message "silence" gets no answer, "hang"
// never returns.
import Foundation
import Synchronization
import NetExt

final class TestProvider: TunnelProvider {
    func startTunnel(options: [String: JSONValue]?, context: ProviderContext) async throws {
        let settings = context.providerConfiguration
        log("startTunnel server=\(context.serverAddress ?? "-") uid=\(getuid()) options=\((options ?? [:]).keys.sorted())")
        if let delay = settings["startDelay"]?.stringValue.flatMap(Double.init) ?? settings["startDelay"]?.numberValue {
            try await Task.sleep(for: .milliseconds(Int(delay * 1000)))
        }
        ignoreStop.withLock { $0 = settings["ignoreStop"] != nil }
        if let message = settings["failStart"]?.stringValue {
            throw NetExtError(.connectionFailed, message)
        }
        if let required = settings["requirePassword"]?.stringValue, context.password != required {
            throw NetExtError(.connectionFailed, "authentication failed")
        }
        if settings["crashAfterStart"] != nil {
            Task {
                try? await Task.sleep(for: .milliseconds(300))
                log("crashing on purpose")
                exit(3)
            }
        }
    }

    func stopTunnel(reason: ProviderStopReason) async {
        log("stopTunnel reason=\(reason.rawValue)")
        if ignoreStop.withLock({ $0 }) {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    func handleAppMessage(_ messageData: Data) async -> Data? {
        let text = String(decoding: messageData, as: UTF8.self)
        log("handleAppMessage \(messageData.count) bytes")
        switch text {
        case "silence": return nil
        case "hang":
            try? await Task.sleep(for: .seconds(3600))
            return nil
        default: return Data("echo: \(text)".utf8)
        }
    }

    let ignoreStop = Mutex(false)
}

func log(_ message: String) {
    FileHandle.standardError.write(Data("netext-test-provider[\(getpid())]: \(message)\n".utf8))
}

let bundleIdentifier = ProcessInfo.processInfo.environment["NETEXT_PROVIDER_BUNDLE_IDENTIFIER"] ?? "com.netext.test-provider"
let provider = TestProvider()
do {
    try await ProviderHost.run(provider, bundleIdentifier: bundleIdentifier)
    log("stopped")
} catch {
    log("ended: \(error)")
    exit(1)
}
