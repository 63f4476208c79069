import Foundation
import NetExtCore
import NetExtDaemon
import NetExtLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The lab in network namespaces, with the real binaries: netextd runs in the laptop namespace
/// and starts its providers as processes; a test starts the servers it needs in the office
/// namespace (`spawn(in:_:_:)`). Needs root. Every name starts with one unique prefix, and
/// `tearDown()` removes the namespaces, processes and files whatever happened.
///
///     laptop (eth0 198.51.100.2) ── internet (198.51.100.1 | 203.0.113.1) ── office (eth0 203.0.113.2)
///
/// The office also holds the internal host 10.20.0.5 (on its loopback), which the internet has
/// no route to: only a tunnel reaches it from the laptop.
public final class NamespaceLab: NetExtLab {
    public let mode = LabMode.namespaces
    public let socketPath: String
    /// The unique prefix of every namespace, link and file of this lab.
    public let prefix: String
    /// The lab's files: providers/, state/, resolv.conf, one log per process.
    public let directory: String

    /// The namespaces of the lab.
    public enum Namespace: String, Sendable, CaseIterable {
        case laptop, internet, office
    }

    /// A provider netextd may run: its executable runs as `nobody`.
    public struct Provider: Sendable {
        public var bundleIdentifier: String
        public var extensionPoint: ProviderManifest.ExtensionPoint
        public var executable: String
        public var arguments: [String]
        public init(bundleIdentifier: String, extensionPoint: ProviderManifest.ExtensionPoint = .packetTunnel, executable: String, arguments: [String] = []) {
            self.bundleIdentifier = bundleIdentifier
            self.extensionPoint = extensionPoint
            self.executable = executable
            self.arguments = arguments
        }
    }

    private let providers: [Provider]
    private let spawned = Mutex<[Int32]>([])
    private let daemon = Mutex<Int32?>(nil)
    private let tornDown = Mutex(false)

    /// The name of a namespace of this lab (as `ip netns` knows it).
    public func name(of namespace: Namespace) -> String { "\(prefix)-\(namespace.rawValue)" }

    /// Builds the namespaces and links, registers `providers` and starts netextd (from
    /// `binaryDirectory`) in the laptop namespace; waits until its socket answers.
    public init(binaryDirectory: String, providers: [Provider], nameserver: String = "198.51.100.53") async throws {
        guard geteuid() == 0 else { throw NetExtError.invalid("the namespace lab needs root (it creates network namespaces)") }
        prefix = "nl" + String(format: "%04x", UInt16.random(in: 0...UInt16.max))
        directory = "/tmp/netext-\(prefix)"
        socketPath = directory + "/netextd.sock"
        self.providers = providers
        do {
            try await build(nameserver: nameserver)
            try await startDaemon(binaryDirectory: binaryDirectory)
        } catch {
            await tearDown()
            throw error
        }
    }

    private func build(nameserver: String) async throws {
        try FileManager.default.createDirectory(atPath: directory + "/providers", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(directory, 0o755)
        for provider in providers {
            let manifest = ProviderManifest(
                bundleIdentifier: provider.bundleIdentifier, extensionPoint: provider.extensionPoint, executable: provider.executable, arguments: provider.arguments)
            try manifest.register(in: directory + "/providers")
        }
        try "nameserver \(nameserver)\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let (laptop, internet, office) = (name(of: .laptop), name(of: .internet), name(of: .office))
        for namespace in Namespace.allCases { try await ip(["netns", "add", name(of: namespace)]) }
        try await ip(["link", "add", "\(prefix)-l0", "netns", laptop, "type", "veth", "peer", "name", "\(prefix)-i0", "netns", internet])
        try await ip(["link", "add", "\(prefix)-o0", "netns", office, "type", "veth", "peer", "name", "\(prefix)-i1", "netns", internet])
        try await shell(in: .laptop, "ip link set lo up && ip link set \(prefix)-l0 name eth0 && ip addr add 198.51.100.2/24 dev eth0 && ip link set eth0 up && ip route add default via 198.51.100.1")
        try await shell(in: .internet, "ip link set lo up && ip link set \(prefix)-i0 name eth0 && ip link set \(prefix)-i1 name eth1 && ip addr add 198.51.100.1/24 dev eth0 && ip addr add 203.0.113.1/24 dev eth1 && ip link set eth0 up && ip link set eth1 up && sysctl -qw net.ipv4.ip_forward=1")
        try await shell(in: .office, "ip link set lo up && ip link set \(prefix)-o0 name eth0 && ip addr add 203.0.113.2/24 dev eth0 && ip link set eth0 up && ip route add default via 203.0.113.1 && ip addr add 10.20.0.5/32 dev lo")
    }

    private func startDaemon(binaryDirectory: String) async throws {
        let environment = [
            "NETEXT_SOCKET": socketPath, "NETEXT_STATE_DIR": directory + "/state", "NETEXT_PROVIDERS_DIR": directory + "/providers",
            "NETEXT_RESOLV_CONF": directory + "/resolv.conf", "NETEXT_DNS_STUB": "127.0.0.1:0",
            "NETEXT_FILTER_RULES_ROOT": directory + "/filter-rules",
        ]
        let pid = try spawn(in: .laptop, binaryDirectory + "/netextd", ["--provider-start-timeout", "40"], log: "netextd", environment: environment)
        daemon.withLock { $0 = pid }
        let ready = await eventually(timeout: .seconds(30)) {
            if kill(pid, 0) != 0 { return true }
            return (try? await controlClient())?.close() != nil
        }
        guard ready, kill(pid, 0) == 0 else {
            throw NetExtError(.daemonUnavailable, "netextd did not start in the namespace lab; its log:\n\(log("netextd"))")
        }
    }

    /// Starts `executable` with `arguments` in `namespace`, its output appended to
    /// `<directory>/<log>.log`; returns its pid (stopped by `stop(_:)` or `tearDown()`).
    @discardableResult
    public func spawn(in namespace: Namespace, _ executable: String, _ arguments: [String], log: String, environment: [String: String] = [:]) throws -> Int32 {
        let logPath = directory + "/\(log).log"
        let script = "exec \"$0\" \"$@\" >> '\(logPath)' 2>&1"
        var variables = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"]
        variables.merge(environment) { $1 }
        let pid = try ProcessSpawner.spawn(
            executable: "/bin/sh", arguments: ["-c", script, CommandRunner.ipPath, "netns", "exec", name(of: namespace), executable] + arguments,
            environment: variables, user: nil, childSocket: -1)
        spawned.withLock { $0.append(pid) }
        return pid
    }

    /// What a spawned process has written so far.
    public func log(_ name: String) -> String {
        (try? String(contentsOfFile: directory + "/\(name).log", encoding: .utf8)) ?? ""
    }

    /// SIGTERM to a spawned process, then SIGKILL after `grace`; reaps it.
    public func stop(_ pid: Int32, grace: Duration = .seconds(5)) async {
        _ = ProcessSpawner.signal(SIGTERM, to: pid)
        let ended = await eventually(timeout: grace) { Self.reap(pid) }
        if !ended {
            _ = ProcessSpawner.signal(SIGKILL, to: pid)
            _ = await BlockingWork.run { ProcessSpawner.waitForExit(pid: pid) }
        }
        spawned.withLock { $0.removeAll { $0 == pid } }
    }

    private static func reap(_ pid: Int32) -> Bool {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        return result == pid || (result < 0 && errno == ECHILD)
    }

    /// Runs a command in a namespace to completion (at most `deadline` seconds).
    public func run(in namespace: Namespace, _ executable: String, _ arguments: [String], deadline: Double = 15) async -> CommandRunner.Outcome {
        let arguments = ["netns", "exec", name(of: namespace), executable] + arguments
        return await BlockingWork.run { CommandRunner.execute(CommandRunner.ipPath, arguments, deadline: deadline) }
    }

    private func ip(_ arguments: [String]) async throws {
        let outcome = await BlockingWork.run { CommandRunner.execute(CommandRunner.ipPath, arguments) }
        guard outcome.status == 0 else { throw NetExtError.invalid("lab: ip \(arguments.joined(separator: " ")) failed: \(outcome.output)") }
    }

    private func shell(in namespace: Namespace, _ script: String) async throws {
        let outcome = await run(in: namespace, "/bin/sh", ["-c", script])
        guard outcome.status == 0 else { throw NetExtError.invalid("lab: in \(namespace): \(script) failed: \(outcome.output)") }
    }

    // MARK: Observations

    public func tunnelRoutes() async throws -> [String] {
        var routes: [String] = []
        for family in ["-4", "-6"] {
            let outcome = await run(in: .laptop, CommandRunner.ipPath, [family, "route", "show", "table", "all"])
            routes += Self.tunnelRoutes(in: outcome.output, isIPv6: family == "-6")
        }
        return routes
    }

    /// The routes of `ip route show table all` output that go into a tunnel interface from a
    /// table of netextd's own (not main, not local), as prefixes.
    static func tunnelRoutes(in output: String, isIPv6: Bool) -> [String] {
        output.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ").map(String.init)
            guard let device = words.firstIndex(of: "dev"), device + 1 < words.count, words[device + 1].hasPrefix("netext"),
                  let table = words.firstIndex(of: "table"), table + 1 < words.count, Int(words[table + 1]) != nil,
                  let first = words.first else { return nil }
            if first == "default" { return isIPv6 ? "::/0" : "0.0.0.0/0" }
            if first.contains("/") { return (try? IPPrefix(first))?.description }
            return IPPrefix.parseAddress(first).map { IPPrefix(address: $0, length: $0.count * 8).description }
        }
    }

    public func ping(_ address: String, timeout: Duration) async throws -> Bool {
        guard IPPrefix.parseAddress(address)?.count == 4 else { throw NetExtError.invalid("ping: '\(address)' is not an IPv4 address") }
        let seconds = max(1, Int(timeout.components.seconds))
        let outcome = await run(in: .laptop, "/usr/bin/ping", ["-n", "-c", "1", "-W", "\(seconds)", address], deadline: Double(seconds + 5))
        return outcome.status == 0
    }

    public func nameservers() async throws -> [String] {
        let text = (try? String(contentsOfFile: directory + "/resolv.conf", encoding: .utf8)) ?? ""
        return ResolverFileText.values(of: "nameserver", in: text)
    }

    public func rewriteResolverFile(_ text: String) async throws {
        try text.write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
    }

    public func trafficGuardIsInstalled() async throws -> Bool {
        guard let nft = CommandRunner.nftPath else { throw NetExtError.invalid("lab: nft is not installed") }
        return await run(in: .laptop, nft, ["list", "table", "inet", TrafficGuard.tableName]).status == 0
    }

    public func contentFilterSteeringIsInstalled() async throws -> Bool {
        await run(in: .laptop, "/bin/sh", ["-c", "iptables-nft -w -t filter -S \(FilterSteering.outputChain) || iptables -w -t filter -S \(FilterSteering.outputChain)"]).status == 0
    }

    public func crashProvider(_ bundleIdentifier: String) async throws -> Bool {
        guard let provider = providers.first(where: { $0.bundleIdentifier == bundleIdentifier }),
              let netextd = daemon.withLock({ $0 }) else { return false }
        var killed = false
        for pid in Self.children(of: netextd) where Self.commandLine(of: pid).first == provider.executable {
            killed = ProcessSpawner.signal(SIGKILL, to: pid) || killed
        }
        return killed
    }

    /// The pids whose parent is `parent`, from /proc.
    static func children(of parent: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
            return status.split(separator: "\n").contains { $0 == "PPid:\t\(parent)" }
        }
    }

    static func commandLine(of pid: Int32) -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    // MARK: Tear-down

    public func tearDown() async {
        guard !tornDown.withLock({ done in defer { done = true }; return done }) else { return }
        // netextd first, so it removes its routes, rules and guard as it would on shutdown.
        if let netextd = daemon.withLock({ $0 }) { await stop(netextd) }
        for pid in spawned.withLock({ $0 }) { await stop(pid, grace: .seconds(2)) }
        for namespace in Namespace.allCases {
            let name = name(of: namespace)
            let pids = await BlockingWork.run { CommandRunner.execute(CommandRunner.ipPath, ["netns", "pids", name]) }
            for pid in pids.output.split(separator: "\n").compactMap({ Int32($0) }) { _ = ProcessSpawner.signal(SIGKILL, to: pid) }
            _ = await BlockingWork.run { CommandRunner.execute(CommandRunner.ipPath, ["netns", "delete", name]) }
            try? FileManager.default.removeItem(atPath: "/etc/netns/\(name)")
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
