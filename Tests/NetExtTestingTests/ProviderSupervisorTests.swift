import Foundation
import NetExtCore
import NetExtDaemon
import NetExtIPC
import NetExtLinux
import NetExtTransport
import Synchronization
import Testing

/// A launcher whose "provider" is a script over the raw control socket: it can say what no
/// `ProviderHost` would (a wrong hello, garbage, a message and an exit at once).
private struct ScriptedProviderLauncher: ProviderLauncher {
    let script: @Sendable (FramedConnection) async throws -> Void

    func start(_ manifest: ProviderManifest, control: Int32, descriptors: Int32, environment: [String: String], isolateNetwork: Bool) throws(NetExtError) -> any ProviderExecution {
        let script = self.script
        let task = Task<Int32, Never> {
            defer { SocketPair.close(descriptors) }
            guard let connection = try? await FramedConnection.adopt(descriptor: control) else { return 1 << 8 }
            defer { connection.close() }
            do { try await script(connection) } catch { return 1 << 8 }
            return 0
        }
        return ScriptedExecution(task: task)
    }
}

private struct ScriptedExecution: ProviderExecution {
    let task: Task<Int32, Never>
    var pid: Int32 { getpid() }
    func waitForExit() async -> Int32 { await task.value }
    func requestEnd() { task.cancel() }
    func forceEnd() { task.cancel() }
}

/// Collects a run's events until its last (`couldNotLaunch` or `exited`), with a bound.
private final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    private let finished = Mutex(false)

    func record(_ event: ProviderEvent) {
        let line: String
        switch event {
        case .couldNotLaunch(let error): line = "couldNotLaunch: \(error.code)"
        case .message(let message): line = "message: \(Self.name(of: message))"
        case .failed(let error): line = "failed: \(error.code): \(error.message)"
        case .exited(let status): line = "exited: \(status >> 8)"
        }
        events.withLock { $0.append(line) }
        switch event {
        case .couldNotLaunch, .exited: finished.withLock { $0 = true }
        default: break
        }
    }

    static func name(of message: ProviderMessage) -> String {
        String(String(describing: message).prefix { $0 != "(" })
    }

    /// The events once the run is over, waiting at most `limit` (and at least 20 looks).
    func all(within limit: Duration = .seconds(90)) async -> [String] {
        let deadline = ContinuousClock.now + limit
        var looks = 0
        while !finished.withLock({ $0 }), ContinuousClock.now < deadline || looks < 20 {
            looks += 1
            try? await Task.sleep(for: .milliseconds(20))
        }
        return events.withLock { $0 }
    }
}

@Suite("Provider supervisor: one launch, hello, start, ordered messages and exit path for every provider kind")
struct ProviderSupervisorTests {
    static let manifest = ProviderManifest(
        bundleIdentifier: "com.example.scripted", extensionPoint: .packetTunnel, executable: "/bin/true", user: "nobody")
    static let start = ProviderStart(
        configuration: Configuration(
            owner: Owner(uid: 0, appIdentifier: "app"), localizedDescription: "Office", isEnabled: true,
            protocolConfiguration: .tunnelProvider(TunnelProviderProtocol(providerBundleIdentifier: "com.example.scripted", serverAddress: "vpn.example.test"))),
        options: [:], password: nil)

    func run(deadline: Duration = .seconds(120), adopt: Bool = true, _ script: @escaping @Sendable (FramedConnection) async throws -> Void) async -> [String] {
        let log = EventLog()
        ProviderSupervisor(launcher: ScriptedProviderLauncher(script: script)).run(
            ProviderLaunch(manifest: Self.manifest, start: Self.start, startDeadline: deadline),
            adopt: { _ in adopt }, events: { log.record($0) })
        return await log.all()
    }

    /// Reads the next message netextd sent the scripted provider.
    static func next(from connection: FramedConnection) async throws -> ProviderMessage? {
        var frames = connection.frames.makeAsyncIterator()
        guard let frame = await frames.next() else { return nil }
        return try ControlProtocol.makeDecoder().decode(ProviderMessage.self, from: frame)
    }

    static let hello = ProviderMessage.hello(bundleIdentifier: "com.example.scripted", version: ControlProtocol.version)

    @Test("a good hello gets start; what follows arrives in order and the exit comes after the provider's last word")
    func orderedMessagesThenExit() async throws {
        let events = await run { connection in
            try await connection.send(Self.hello)
            guard case .start? = try await Self.next(from: connection) else { throw NetExtError(.protocolError, "no start") }
            try await connection.send(ProviderMessage.reasserting(true))
            try await connection.send(ProviderMessage.started)
            // The last word and the exit at once: the exit must not overtake it.
            try await connection.send(ProviderMessage.failed(NetExtError(.connectionFailed, "server went away")))
        }
        #expect(events == ["message: reasserting", "message: started", "message: failed", "exited: 0"])
    }

    @Test("a hello under another name is refused and the provider ended")
    func wrongHello() async {
        let events = await run { connection in
            try await connection.send(ProviderMessage.hello(bundleIdentifier: "com.example.other", version: ControlProtocol.version))
            _ = try await Self.next(from: connection)
        }
        #expect(events.count == 2)
        #expect(events.first?.hasPrefix("failed: protocolError: provider 'com.example.scripted' said hello as 'com.example.other'") == true)
        #expect(events.last?.hasPrefix("exited") == true)
    }

    @Test("garbage, a message before hello and a second hello each end the run as a protocol failure")
    func protocolViolations() async {
        let garbage = await run { connection in
            try await connection.send(payload: [UInt8]("not json".utf8))
            _ = try await Self.next(from: connection)
        }
        #expect(garbage.first == "failed: protocolError: provider 'com.example.scripted' sent a malformed message")
        let early = await run { connection in
            try await connection.send(ProviderMessage.started)
            _ = try await Self.next(from: connection)
        }
        #expect(early.first == "failed: protocolError: provider 'com.example.scripted' sent a message before its hello")
        let twice = await run { connection in
            try await connection.send(Self.hello)
            try await connection.send(Self.hello)
            _ = try await Self.next(from: connection)
            _ = try await Self.next(from: connection)
        }
        #expect(twice.first == "failed: protocolError: provider 'com.example.scripted' said hello twice")
        for events in [garbage, early, twice] { #expect(events.last?.hasPrefix("exited") == true, "\(events)") }
    }

    @Test("a provider that never settles its start fails at the start deadline and is ended")
    func startDeadline() async {
        let events = await run(deadline: .milliseconds(200)) { connection in
            try await connection.send(Self.hello)
            // Waits for start, then for a stop that never comes; ending it closes the socket.
            while try await Self.next(from: connection) != nil {}
        }
        #expect(events.first == "failed: timedOut: provider 'com.example.scripted' did not finish starting within 0.2 seconds")
        #expect(events.last?.hasPrefix("exited") == true)
    }

    @Test("a launcher that cannot start the provider gives couldNotLaunch and nothing else")
    func couldNotLaunch() async {
        let log = EventLog()
        ProviderSupervisor(launcher: InProcessLauncherWithout()).run(
            ProviderLaunch(manifest: Self.manifest, start: Self.start, startDeadline: .seconds(120)), adopt: { _ in true }, events: { log.record($0) })
        let events = await log.all()
        #expect(events == ["couldNotLaunch: providerFailed"])
    }
}

/// A launcher that knows no provider.
private struct InProcessLauncherWithout: ProviderLauncher {
    func start(_ manifest: ProviderManifest, control: Int32, descriptors: Int32, environment: [String: String], isolateNetwork: Bool) throws(NetExtError) -> any ProviderExecution {
        SocketPair.close(control)
        SocketPair.close(descriptors)
        throw NetExtError(.providerFailed, "no such provider")
    }
}
