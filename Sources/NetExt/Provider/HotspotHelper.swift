import Foundation
import NetExtCore
import NetExtIPC

/// A hotspot helper (extension point `hotspot-helper`), as Apple's `NEHotspotHelper`: netextd
/// sends it a command for each network it is to look at — filter the scan list, evaluate a
/// network just joined, authenticate to its captive portal, present UI, maintain the session,
/// log off — and the helper answers each with one of Apple's results, annotating networks with
/// its confidence (`HotspotHelperSession` is netextd's side of the exchange).
///
/// Where Apple's handler calls `response.deliver()`, here `handle(_:)` returns the response:
///
/// ```swift
/// final class CaféHelper: HotspotHelper {
///     func handle(_ command: HotspotHelperCommand) async -> HotspotHelperResponse {
///         switch command.kind {
///         case .evaluate:
///             var network = command.network!
///             network.setConfidence(network.ssid == "Café" ? .high : .none)
///             var response = command.createResponse(.success)
///             response.setNetwork(network)
///             return response
///         case .authenticate: return command.createResponse(await logIn() ? .success : .temporaryFailure)
///         default: return command.createResponse(.commandNotRecognized)
///         }
///     }
/// }
/// try await ProviderHost.run(hotspotHelper: CaféHelper(), bundleIdentifier: "com.example.cafe")
/// ```
public protocol HotspotHelper: AnyObject, Sendable {
    /// Called once when netextd starts the helper, with the options of its manifest's start.
    func start(options: [String: JSONValue]) async throws
    /// Called when netextd stops the helper; the process exits after it returns.
    func stop(reason: ProviderStopReason) async
    /// The answer to `command` (made with `command.createResponse(_:)`). A command the helper
    /// does not handle is answered `commandNotRecognized`.
    func handle(_ command: HotspotHelperCommand) async -> HotspotHelperResponse
}

extension HotspotHelper {
    public func start(options: [String: JSONValue]) async throws {}
    public func stop(reason: ProviderStopReason) async {}
}
