import Foundation
import NetExtCore
import NetExtIPC
import NetExtTransport
import NIOFoundationCompat
import NetExtLinux

/// Runs a provider inside the process netextd started: speaks the provider protocol over the
/// inherited socket (descriptor 3), calls the provider's lifecycle methods, and returns when the
/// provider has stopped (or failed to start). netextd passes descriptors on descriptor 4.
public enum ProviderHost {
    /// The descriptor netextd hands every provider.
    public static let controlDescriptor: Int32 = ProviderDescriptors.control
    /// The descriptor on which netextd passes file descriptors (the TUN device) with SCM_RIGHTS.
    public static let descriptorPassingDescriptor: Int32 = ProviderDescriptors.descriptorPassing

    /// Runs `provider` until it is stopped. Returns normally after a stop or a failed start;
    /// throws if netextd misbehaves or goes away. `descriptor` and `descriptorSocket` are the
    /// provider's ends of its two sockets: a provider process keeps the defaults; a test that
    /// runs a provider inside its own process (NetExtTesting) passes socketpair ends.
    public static func run(_ provider: any TunnelProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serve(
            Lifecycle(
                start: { start, session in
                    let context = ProviderContext(configuration: start.configuration, password: start.password, session: session)
                    try await provider.startTunnel(options: start.options, context: context)
                },
                stop: { reason in await provider.stopTunnel(reason: reason) },
                appMessage: { data in await provider.handleAppMessage(data) }),
            bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Runs an app proxy until it is stopped: `startProxy`, then one `handleNewFlow` per flow
    /// netextd hands over (descriptor 4), each answered as soon as it returns.
    public static func run(appProxy provider: any AppProxyProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serveProxy(provider, returnsDeclinedFlows: false, bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Runs a transparent proxy until it is stopped: `startProxy` (which sets its network
    /// rules), then one `handleNewFlow` per flow; a declined flow goes back to netextd, which
    /// sends it on directly.
    public static func run(transparentProxy provider: any TransparentProxyProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serveProxy(provider, returnsDeclinedFlows: true, bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Runs a DNS proxy until it is stopped: `startProxy`, then one `handleNewFlow` or
    /// `handleNewUDPFlow` per DNS flow of any program; a declined flow goes back to netextd,
    /// which sends it on to its server.
    public static func run(dnsProxy provider: any DNSProxyProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serveProxy(provider, returnsDeclinedFlows: true, bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// `startProxy`, then the flows: an app proxy's and a transparent proxy's run differ only in
    /// what becomes of a declined flow.
    private static func serveProxy(_ provider: any AppProxyProvider, returnsDeclinedFlows: Bool, bundleIdentifier: String, descriptor: Int32, descriptorSocket: Int32) async throws {
        try await serve(
            Lifecycle(
                start: { start, session in
                    try await provider.startProxy(options: start.options, context: AppProxyContext(configuration: start.configuration, password: start.password, session: session))
                    AppProxyFlowServer.start(provider, channel: session.descriptorSocket, returnsDeclinedFlows: returnsDeclinedFlows)
                },
                stop: { reason in await provider.stopProxy(with: reason) },
                appMessage: { data in await provider.handleAppMessage(data) }),
            bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Runs a content filter's data provider until it is stopped: `startFilter`, then one
    /// `handleNewFlow` per flow netextd asks about, each answered as soon as it returns.
    public static func run(filter provider: any FilterDataProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serve(
            Lifecycle(
                start: { start, session in
                    try await provider.startFilter(context: FilterContext(configuration: start.configuration, options: start.options, session: session))
                    serveFlows(provider, channel: session.descriptorSocket)
                },
                stop: { reason in await provider.stopFilter(reason: reason) },
                appMessage: { _ in nil },
                rulesChanged: {
                    await provider.handleRulesChanged()
                    return .rulesApplied
                }),
            bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Runs a content filter's control provider until it is stopped: `startFilter` with a
    /// context that can `notifyRulesChanged()`, then `handleNewFlow` for each flow the data
    /// provider could not judge without new rules.
    public static func run(filterControl provider: any FilterControlProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serve(
            Lifecycle(
                start: { start, session in
                    try await provider.startFilter(context: FilterControlContext(configuration: start.configuration, session: session))
                },
                stop: { reason in await provider.stopFilter(reason: reason) },
                appMessage: { data in await provider.handleAppMessage(data) },
                newFlow: { flow in .controlVerdict(flowID: flow.id, verdict: await provider.handleNewFlow(flow)) }),
            bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Runs a URL filter's control provider until it is stopped: `start`, then one
    /// `fetchPrefilter()` per request from netextd.
    public static func run(urlFilterControl provider: any URLFilterControlProvider, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serve(
            Lifecycle(
                start: { start, _ in try await provider.start(configuration: start.configuration) },
                stop: { reason in await provider.stop(reason: reason) },
                appMessage: { _ in nil },
                fetchPrefilter: { id in
                    do { return .prefilterFetched(id: id, prefilter: try await provider.fetchPrefilter(), error: nil) } catch {
                        let reported = (error as? NetExtError) ?? NetExtError(.providerFailed, "\(error)")
                        return .prefilterFetched(id: id, prefilter: nil, error: reported)
                    }
                }),
            bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    /// Answers what netextd sends on the flow channel (descriptor 4, `FlowChannelCodec`) on a
    /// thread of its own: one `handleNewFlow` call and one verdict per flow; for flows answered
    /// `.filterData`, one data handler call and one data verdict per batch of bytes shown.
    /// Runs a hotspot helper: answers netextd's commands with `provider.handle(_:)`, each
    /// answer sent back with the command's ID (commands before the start are not answered;
    /// netextd sends none).
    public static func run(hotspotHelper provider: any HotspotHelper, bundleIdentifier: String, descriptor: Int32 = controlDescriptor, descriptorSocket: Int32 = descriptorPassingDescriptor) async throws {
        try await serve(
            Lifecycle(
                start: { start, _ in try await provider.start(options: start.options) },
                stop: { reason in await provider.stop(reason: reason) },
                appMessage: { _ in nil },
                hotspotCommand: { command in
                    var response = await provider.handle(command)
                    // The answer is to this command, whatever the helper wrote in it.
                    response.commandID = command.id
                    return .hotspotResponse(response)
                }),
            bundleIdentifier: bundleIdentifier, descriptor: descriptor, descriptorSocket: descriptorSocket)
    }

    private static func serveFlows(_ provider: any FilterDataProvider, channel: Int32) {
        let thread = Thread {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FlowChannelCodec.maximumMessage, alignment: 8)
            defer { buffer.deallocate() }
            var reading = FlowsReadingData()
            while true {
                let length: Int
                do { length = try SocketPair.receiveMessage(into: buffer, over: channel) } catch { return }
                if length == 0 { return }
                let message: FlowChannelCodec.ToProvider
                do { message = try FlowChannelCodec.decodeToProvider(UnsafeRawBufferPointer(rebasing: buffer[..<length])) } catch {
                    FileHandle.standardError.write(Data("filter provider: malformed message from netextd: \(error)\n".utf8))
                    continue
                }
                guard let answer = reading.answer(message, provider: provider) else { continue }
                do { try SocketPair.sendMessage(FlowChannelCodec.encode(answer), over: channel, wait: true) } catch { return }
            }
        }
        thread.name = "netext-provider-flows"
        thread.start()
    }

    /// What the protocol loop calls for each kind of provider.
    private struct Lifecycle: Sendable {
        var start: @Sendable (ProviderStart, ProviderSession) async throws -> Void
        var stop: @Sendable (ProviderStopReason) async -> Void
        var appMessage: @Sendable (Data) async -> Data?
        /// A flow to judge; returns the verdict message to send back.
        var newFlow: (@Sendable (FilterFlow) async -> ProviderMessage)? = nil
        /// New rules: runs before any later message is handled; returns the answer to send.
        var rulesChanged: (@Sendable () async -> ProviderMessage)? = nil
        /// A prefilter request; returns the answer to send.
        var fetchPrefilter: (@Sendable (Int) async -> ProviderMessage)? = nil
        var hotspotCommand: (@Sendable (HotspotHelperCommand) async -> ProviderMessage)? = nil
    }

    private static func serve(_ lifecycle: Lifecycle, bundleIdentifier: String, descriptor: Int32, descriptorSocket: Int32) async throws {
        let connection = try await FramedConnection.adopt(descriptor: descriptor)
        let session = ProviderSession(connection: connection, descriptorSocket: descriptorSocket)
        try await session.send(.hello(bundleIdentifier: bundleIdentifier, version: ControlProtocol.version))
        let decoder = ControlProtocol.makeDecoder()
        var started = false
        for await frame in connection.frames {
            let message: ProviderMessage
            do { message = try decoder.decode(ProviderMessage.self, from: frame) } catch {
                session.finish()
                throw NetExtError(.protocolError, "malformed message from netextd: \(error)")
            }
            switch message {
            case .start(let start) where !started:
                started = true
                // The start runs beside this loop: it may call setTunnelNetworkSettings, whose
                // answer arrives here.
                Task {
                    do {
                        try await lifecycle.start(start, session)
                        try await session.send(.started)
                    } catch {
                        let reported = (error as? NetExtError) ?? NetExtError(.connectionFailed, "\(error)")
                        try? await session.send(.failed(reported))
                        session.finish()
                    }
                }
            case .stop(let reason):
                Task {
                    await lifecycle.stop(reason)
                    try? await session.send(.stopped)
                    session.finish()
                }
            case .networkSettingsApplied, .networkSettingsRefused, .filterSettingsApplied, .filterSettingsRefused:
                session.answer(message)
            case .appMessage(let id, let data):
                let isStarted = started
                Task {
                    let reply = isStarted ? await lifecycle.appMessage(data) : nil
                    try? await session.send(.appMessageReply(id: id, data: reply))
                }
            case .newFlow(let flow) where lifecycle.newFlow != nil:
                let judge = lifecycle.newFlow!
                Task {
                    let verdict = await judge(flow)
                    try? await session.send(verdict)
                }
            case .fetchPrefilter(let id) where lifecycle.fetchPrefilter != nil && started:
                let fetch = lifecycle.fetchPrefilter!
                Task { try? await session.send(await fetch(id)) }
            case .hotspotCommand(let command) where lifecycle.hotspotCommand != nil && started:
                let answer = lifecycle.hotspotCommand!
                Task { try? await session.send(await answer(command)) }
            case .rulesChanged where lifecycle.rulesChanged != nil:
                // Handled before the next message, so flows asked again see the new rules.
                let answer = await lifecycle.rulesChanged!()
                try? await session.send(answer)
            default:
                session.finish()
                throw NetExtError(.protocolError, "unexpected message from netextd: \(message)")
            }
        }
        if !session.isFinished {
            throw NetExtError(.daemonUnavailable, "netextd closed the provider connection")
        }
    }
}
