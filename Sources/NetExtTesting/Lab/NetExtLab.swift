import NetExt
import NetExtCore

/// Where a lab test body runs: the machine NetExt runs on (the "laptop", with its netextd) and
/// what a test can observe of it. Write a body once against this protocol and run it in both
/// modes: `InProcessLab` (netextd's own code over fakes, in the test's process, no root,
/// milliseconds) and `NamespaceLab` (the real binaries in network namespaces, root, seconds).
///
/// The laptop's numbering is the same in both: its underlay is 198.51.100.2/24 with the router
/// 198.51.100.1, and the internet beyond holds 203.0.113.0/24; 10.20.0.0/16 (the office) is not
/// reachable from the underlay, only through a tunnel. See docs/testing.md.
public protocol NetExtLab: Sendable {
    /// Which kind of lab this is.
    var mode: LabMode { get }

    /// The path of this lab's netextd control socket.
    var socketPath: String { get }

    /// The routes the laptop has into its tunnel interfaces, as prefixes ("10.20.0.0/16").
    func tunnelRoutes() async throws -> [String]

    /// Whether one ICMPv4 echo from the laptop to `address` (dotted quad) is answered within
    /// `timeout`, by whatever way the laptop's routes and packet filter send it.
    func ping(_ address: String, timeout: Duration) async throws -> Bool

    /// The name servers of the laptop's resolver file.
    func nameservers() async throws -> [String]

    /// Whether netextd's traffic guard (the kill switch's packet filter) is in place.
    func trafficGuardIsInstalled() async throws -> Bool

    /// Whether the content filter's steering rules (what brings flows to netextd) are in place.
    func contentFilterSteeringIsInstalled() async throws -> Bool

    /// Ends the running provider of `bundleIdentifier` as a crash would. Returns false if none runs.
    func crashProvider(_ bundleIdentifier: String) async throws -> Bool

    /// Rewrites the laptop's resolver file with `text`, as a DHCP client does on joining another
    /// network (connect on demand's DNS rules read it).
    func rewriteResolverFile(_ text: String) async throws

    /// Removes everything the lab made (processes, namespaces, files). Safe to call twice.
    func tearDown() async
}

/// How a lab is built.
public enum LabMode: String, Sendable, CaseIterable, CustomStringConvertible {
    /// netextd's own types in the test's process: the recording applier for the kernel, the
    /// in-process launcher for providers, an in-memory store. No root.
    case inProcess = "in-process fakes"
    /// The real binaries in network namespaces joined by veth pairs. Root.
    case namespaces = "network namespaces"

    public var description: String { rawValue }
}

extension NetExtLab {
    /// A control client of this lab's netextd, introduced as `appIdentifier`.
    public func controlClient(appIdentifier: String = "com.example.lab-test") async throws -> ControlClient {
        try await ControlClient.connect(appIdentifier: appIdentifier, socketPath: socketPath)
    }

    /// Waits until `condition` holds, looking every 50 ms, at most `timeout` and at least 20
    /// looks (a starved machine may sleep through the whole time between two looks). Returns
    /// whether it held.
    public func eventually(timeout: Duration = .seconds(20), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + timeout
        var looks = 0
        while true {
            if try await condition() { return true }
            looks += 1
            if clock.now >= end && looks >= 20 { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
