import Foundation
import Logging
import NetExt
import NetExtCore
import NetExtDaemon
import NetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The lab in the test's own process: netextd's control server, control service, session
/// manager and store (in memory), with the recording applier standing in for the kernel and
/// the in-process launcher for provider processes. No root, no namespaces, milliseconds.
///
/// The applier's record plays the laptop's kernel: `ping` follows the active plans' policy
/// rules and tables (`NetworkPlan.route(to:through:)`) into a tunnel interface — where the
/// provider reads it — or out to the underlay, where the traffic guard's rules
/// (`TrafficGuard.dropsDirectPacket(to:)`) may drop it and only `underlay` networks answer.
///
/// Connect on demand runs over `ScriptedNetworkObserver`: the laptop stays on ethernet `eth0`
/// unless a test moves it (`observer.join`), and the rules see the lab's resolver file.
///
/// The content filter runs over `SimulatedFilterKernel`: a ping leaves through its output hook
/// and its answer comes in through the input hook, steered by the rules netextd installed and
/// judged by the filter engine and the (in-process) filter providers.
///
/// What it does not run: the URL filter, on-demand probes and EvaluateConnection's name checks
/// (they reach real addresses), and anything a provider process would have of its own (user,
/// namespace, signals; a filter data provider's rules directory comes from its environment,
/// which an in-process provider does not get).
public final class InProcessLab: NetExtLab {
    public let mode = LabMode.inProcess
    public let socketPath: String
    /// What netextd asked of the kernel, in order; the test's ends of the tunnel interfaces.
    public let applier: RecordingNetworkApplier
    /// The providers, running as tasks of this process.
    public let launcher: InProcessProviderLauncher
    public let sessions: SessionManager
    /// The content filter, over `filterKernel`.
    public let filters: FilterController
    /// The kernel's side of the content filter: steering, queue, conntrack.
    public let filterKernel = SimulatedFilterKernel()
    public let store: ConfigurationStore
    /// The network connect on demand sees; move the laptop with `join`.
    public let observer: ScriptedNetworkObserver
    public let onDemand: OnDemandController
    /// The networks that answer a ping sent over the underlay (the fake internet).
    public let underlay: [IPPrefix]
    let directory: String
    let resolver: ResolverConfiguration
    private let server: Mutex<ControlServer?>
    /// One ping at a time reads a tunnel interface.
    private let pinging = Mutex(false)
    private let nextIdentifier = Atomic<UInt16>(0x4e58)

    /// The networks of the laptop's fake underlay: its own subnet and the internet's.
    public static let defaultUnderlay: [IPPrefix] = [try! IPPrefix("198.51.100.0/24"), try! IPPrefix("203.0.113.0/24")]

    /// Builds the lab and starts its control server.
    /// - Parameters:
    ///   - providers: bundle identifier → how to make that provider; each is registered with a
    ///     manifest of the matching extension point (run as `nobody`).
    ///   - nameserver: the laptop's resolver file's name server before any tunnel.
    ///   - startDeadline: how long a provider may take to start.
    public init(
        providers: [String: InProcessProviderLauncher.Factory], underlay: [IPPrefix] = InProcessLab.defaultUnderlay,
        nameserver: String = "198.51.100.53", startDeadline: Duration = .seconds(120), logger: Logger? = nil
    ) async throws {
        directory = NSTemporaryDirectory() + "netext-lab-\(UUID().uuidString.prefix(8).lowercased())"
        let providersDirectory = directory + "/providers"
        try FileManager.default.createDirectory(atPath: providersDirectory, withIntermediateDirectories: true)
        for (bundle, factory) in providers {
            try ProviderManifest(bundleIdentifier: bundle, extensionPoint: factory.extensionPoint, executable: "/bin/true").register(in: providersDirectory)
        }
        resolver = ResolverConfiguration(path: directory + "/resolv.conf", backupPath: directory + "/resolv.conf.backup")
        try "nameserver \(nameserver)\n".write(toFile: resolver.path, atomically: true, encoding: .utf8)
        self.underlay = underlay
        let logger = logger ?? Logger(label: "netext-lab") { _ in SwiftLogNoOpLogHandler() }
        applier = RecordingNetworkApplier(localNetworks: [underlay[0]])
        launcher = InProcessProviderLauncher(providers)
        let hub = NotificationHub()
        let registry = ProviderRegistry(directory: providersDirectory)
        sessions = SessionManager(
            registry: registry, hub: hub, logger: logger, applier: applier, resolver: resolver,
            dnsStubAddress: SocketAddress(address: [127, 0, 0, 1], port: 0), startDeadline: startDeadline, stopDeadline: .seconds(2),
            launcher: launcher)
        store = try ConfigurationStore()
        let secrets = try SecretStore(directory: directory + "/secrets")
        filters = FilterController(
            registry: registry, logger: logger, rulesRoot: directory + "/filter-rules", startDeadline: startDeadline, launcher: launcher,
            plumbing: filterKernel)
        let service = ControlService(store: store, secrets: secrets, sessions: sessions, registry: registry, hub: hub, logger: logger, filters: filters)
        observer = ScriptedNetworkObserver { [resolver] in resolver.originalContent() }
        onDemand = OnDemandController(
            store: store, sessions: sessions, observer: observer, logger: logger, password: { configuration in try secrets.password(of: configuration) })
        await onDemand.start()
        socketPath = directory + "/netextd.sock"
        // The test's own group administers this netextd (as the admin group would).
        server = Mutex(try await ControlServer.start(path: socketPath, service: service, adminGroupID: getegid(), logger: logger))
    }

    public func tunnelRoutes() async throws -> [String] {
        applier.activePlans.flatMap(\.includedRoutes).map(\.description)
    }

    public func nameservers() async throws -> [String] {
        let text = (try? String(contentsOfFile: resolver.path, encoding: .utf8)) ?? ""
        return ResolverFileText.values(of: "nameserver", in: text)
    }

    public func trafficGuardIsInstalled() async throws -> Bool {
        applier.currentGuard?.isActive ?? false
    }

    public func contentFilterSteeringIsInstalled() async throws -> Bool {
        filterKernel.steering != nil
    }

    public func crashProvider(_ bundleIdentifier: String) async throws -> Bool {
        launcher.crash(bundleIdentifier)
    }

    public func rewriteResolverFile(_ text: String) async throws {
        try text.write(toFile: resolver.path, atomically: true, encoding: .utf8)
        observer.changed()
    }

    public func ping(_ address: String, timeout: Duration) async throws -> Bool {
        guard let destination = IPPrefix.parseAddress(address), destination.count == 4 else {
            throw NetExtError.invalid("ping: '\(address)' is not an IPv4 address")
        }
        switch NetworkPlan.route(to: destination, through: applier.activePlans) {
        case .main:
            if let trafficGuard = applier.currentGuard, trafficGuard.dropsDirectPacket(to: destination) { return false }
            // The underlay answers its networks; the echo and its answer cross the content
            // filter's hooks like any packet.
            let identifier = nextIdentifier.wrappingAdd(1, ordering: .relaxed).newValue
            let request = EchoPacket.request(from: Self.laptopAddress, to: destination, identifier: identifier, sequence: 1)
            guard await filterKernel.send(request, outbound: true, ownerUID: getuid(), timeout: timeout) == .passed,
                  underlay.contains(where: { $0.contains(IPPrefix(address: destination, length: 32)) }),
                  let parsed = EchoPacket.parse(request) else { return false }
            return await filterKernel.send(EchoPacket.reply(to: parsed), outbound: false, timeout: timeout) == .passed
        case .tunnel(let plan):
            guard let end = applier.interfaceEnd(named: plan.interface),
                  let source = plan.addresses.first(where: { !$0.isIPv6 }) else { return false }
            return try await echo(over: end, from: source.address, to: destination, timeout: timeout)
        }
    }

    /// The laptop's address on its underlay.
    public static let laptopAddress: [UInt8] = [198, 51, 100, 2]

    /// Writes an echo request into the tunnel interface (as the kernel would route it there) and
    /// reads what the provider writes back until the matching reply or the timeout.
    private func echo(over end: Int32, from source: [UInt8], to destination: [UInt8], timeout: Duration) async throws -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while pinging.withLock({ busy in defer { busy = true }; return busy }) {
            guard clock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        defer { pinging.withLock { $0 = false } }
        let identifier = nextIdentifier.wrappingAdd(1, ordering: .relaxed).newValue
        let request = EchoPacket.request(from: source, to: destination, identifier: identifier, sequence: 1)
        try SocketPair.sendMessage(request, over: end, wait: false)
        var reader = PacketDescriptor(end)
        while clock.now < deadline {
            while let packet = reader.receive() {
                if let reply = EchoPacket.parse(Array(packet)), !reply.isRequest, reply.identifier == identifier,
                   reply.source == destination, reply.destination == source { return true }
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    public func tearDown() async {
        if let server = server.withLock({ server in defer { server = nil }; return server }) {
            await onDemand.stop()
            await sessions.stopAll()
            await filters.stopAll()
            await server.close(path: socketPath)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension ProviderManifest {
    /// Writes the manifest where netextd's registry reads it: `<directory>/<bundle>.json`,
    /// mode 0644 (netextd refuses manifests others may write).
    func register(in directory: String) throws {
        let path = directory + "/\(bundleIdentifier).json"
        try JSONEncoder().encode(self).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
    }
}

extension InProcessProviderLauncher.Factory {
    /// The extension point of the providers this makes.
    var extensionPoint: ProviderManifest.ExtensionPoint {
        switch self {
        case .tunnel: .packetTunnel
        case .filterData: .filterData
        case .filterControl: .filterControl
        case .urlFilterControl: .urlFilterControl
        }
    }
}
