import Foundation
import IKEv2VICI
import Logging
import NetExtCore
import NetExtLinux

/// The built-in IKEv2 client of a personal VPN: one strongSwan charon, started by netextd in a
/// mount namespace of its own (its `/run` is `directory/run`) and driven over its VICI socket.
/// The calls block (a few seconds at most) and are made off netextd's actors.
final class IKEv2Client: @unchecked Sendable {
    /// What the connection looks like once it is up.
    struct Connected: Sendable {
        /// The TUN device charon's user-space ESP uses (`ipsec0`).
        var interface: String
        var virtualAddresses: [String]
        var nameServers: [String]
        var remoteTrafficSelectors: [String]
    }

    /// Where strongSwan's daemon is; `NETEXT_CHARON` overrides it.
    static var charonPath: String {
        ProcessInfo.processInfo.environment["NETEXT_CHARON"] ?? "/usr/lib/ipsec/charon"
    }
    /// The user charon drops to (`NETEXT_IKEV2_USER`, default `netext-ikev2`).
    static var userName: String {
        ProcessInfo.processInfo.environment["NETEXT_IKEV2_USER"] ?? "netext-ikev2"
    }

    /// charon's user and group names, if the user exists.
    static func account() -> (user: String, group: String)? {
        guard let user = UserDatabase.user(named: userName), user.uid != 0, let group = UserDatabase.groupName(id: user.gid) else { return nil }
        return (user.name, group)
    }

    static let installHint = "install strongSwan: apt-get install strongswan-charon libcharon-extra-plugins libstrongswan-standard-plugins libcharon-extauth-plugins"

    let plan: IKEv2ClientPlan
    /// netextd's directory for this client; charon sees `directory/run` as its `/run`.
    let directory: String
    private let logger: Logger
    /// Removes what a killed charon left in the routing policy.
    private let applier: any NetworkApplier
    private let lock = NSLock()
    private var pid: Int32 = 0
    private var watcher: VICIConnection?

    init(plan: IKEv2ClientPlan, directory: String, logger: Logger, applier: any NetworkApplier) {
        self.plan = plan
        self.directory = directory
        self.logger = logger
        self.applier = applier
    }

    var runDirectory: String { directory + "/run" }
    /// A path charon sees as `/run/NAME`, as netextd sees it.
    private func outside(_ charonPath: String) -> String { runDirectory + charonPath.dropFirst("/run".count) }

    /// The charon process, once started.
    var processID: Int32 { lock.withLock { pid } }

    // MARK: Starting

    /// Starts charon (ending one an earlier netextd left behind in the same directory).
    func launch() throws(NetExtError) {
        guard FileManager.default.isExecutableFile(atPath: Self.charonPath) else {
            throw NetExtError(.connectionFailed, "the IKEv2 client needs strongSwan's charon at \(Self.charonPath); \(Self.installHint)")
        }
        Self.endLeftover(in: runDirectory)
        do {
            try FileManager.default.createDirectory(atPath: runDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
            for name in ["charon.vici", "charon.pid", "charon.log", "dns"] { try? FileManager.default.removeItem(atPath: runDirectory + "/" + name) }
            // charon dropped to its user writes only the DNS file; it may pass through /run
            // (0711) but not list it, and the VICI socket stays root's.
            let dns = outside(IKEv2ClientPlan.resolverDirectory)
            try FileManager.default.createDirectory(atPath: dns, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            if let user = plan.user.flatMap(UserDatabase.user(named:)) {
                guard chown(dns, user.uid, user.gid) == 0 else { throw SystemError("chown", errno: errno, subject: dns) }
                try FileManager.default.setAttributes([.posixPermissions: 0o711], ofItemAtPath: runDirectory)
            }
            try Data(plan.daemonSettings.utf8).write(to: URL(fileURLWithPath: outside(IKEv2ClientPlan.settingsPath)))
        } catch {
            throw NetExtError(.connectionFailed, "cannot prepare the IKEv2 client's directory \(directory): \(error)")
        }
        // unshare(1) gives charon its own mount namespace; the shell there binds the private
        // directory over /run (charon's pid file is always /run/charon.pid) and execs charon.
        let child: Int32
        do {
            child = try ProcessSpawner.spawn(
                executable: "/usr/bin/unshare",
                arguments: ["--mount", "--propagation", "private", "/bin/sh", "-c", "mount --bind \"$1\" /run && exec \"$2\"", "netext-ikev2", runDirectory, Self.charonPath],
                environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "STRONGSWAN_CONF": IKEv2ClientPlan.settingsPath],
                user: nil, childSocket: -1)
        } catch {
            throw NetExtError(.connectionFailed, "cannot start charon: \(error)")
        }
        lock.withLock { pid = child }
        logger.info("IKEv2: charon started", metadata: ["pid": "\(child)", "directory": "\(directory)"])
    }

    /// Loads the connection and its secrets into charon, starts it, and waits (until `deadline`)
    /// for the tunnel: IKE SA established, child SA installed, virtual address on the TUN device.
    func connect(sharedSecret: String, password: String?, deadline: ContinuousClock.Instant) throws(NetExtError) -> Connected {
        let authentication = try plan.authentication(hasSharedSecret: !sharedSecret.isEmpty, hasPassword: password?.isEmpty == false)
        let vici = try waitForSocket(until: min(deadline, .now + .seconds(10)))
        defer { vici.close() }
        for secret in plan.loadSecrets(authentication: authentication, sharedSecret: sharedSecret, password: password) {
            try vici.request("load-shared", secret)
        }
        try vici.request("load-conn", plan.loadConnection(authentication: authentication))
        let remaining = max(1000, Int((deadline - .now).components.seconds * 1000) - 500)
        // charon narrates the attempt as control-log events; on failure they carry the reason.
        let attempt = try vici.request("initiate", IKEv2ClientPlan.initiate(timeoutMilliseconds: min(remaining, 25_000)), streaming: "control-log", failing: false)
        if attempt.response[text: "success"] != "yes" {
            let narration = attempt.events.compactMap { $0[text: "msg"] }
            throw NetExtError(.connectionFailed, "IKEv2: " + IKEv2ClientPlan.failureReason(narration: narration, errorMessage: attempt.response[text: "errmsg"]))
        }
        // `initiate` answers as the child SA is established; charon may still be installing it.
        var state: IKEv2SAState?
        let settle = min(deadline, .now + .seconds(3))
        while true {
            let events = try vici.request("list-sas", IKEv2ClientPlan.listSAs, streaming: "list-sa").events
            state = events.lazy.compactMap { IKEv2SAState(event: $0) }.first
            if state?.isUp == true || ContinuousClock.now >= settle { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        guard let sa = state, sa.isUp else {
            let seen = state.map { "IKE SA \($0.state), child SA \($0.childState ?? "none")" } ?? "no IKE SA"
            throw NetExtError(.connectionFailed, "IKEv2: the connection did not come up (\(seen))\(logTail())")
        }
        guard !sa.virtualAddresses.isEmpty else {
            throw NetExtError(.connectionFailed, "IKEv2: the server assigned no virtual address (configuration payload); a personal VPN needs one")
        }
        guard let interface = Self.interface(holding: sa.virtualAddresses) else {
            throw NetExtError(.connectionFailed, "IKEv2: no interface holds the virtual address \(sa.virtualAddresses.joined(separator: ", "))")
        }
        // charon installs the routes and the rule as the child SA goes in, not always before
        // `initiate` answers: "connected" waits for them, so no packet meant for the tunnel can
        // take the main table.
        guard waitForRouting(until: min(deadline, .now + .seconds(3))) else {
            throw NetExtError(.connectionFailed, "IKEv2: charon did not install its routes (table \(plan.routingTable), rule \(plan.rulePriority))\(logTail())")
        }
        let resolver = (try? String(contentsOfFile: outside(IKEv2ClientPlan.resolverPath), encoding: .utf8)) ?? ""
        return Connected(
            interface: interface, virtualAddresses: sa.virtualAddresses,
            nameServers: IKEv2ClientPlan.nameServers(inResolverFile: resolver), remoteTrafficSelectors: sa.remoteTrafficSelectors)
    }

    /// Whether charon's rule and at least one route in its table are in place (polled until `deadline`).
    private func waitForRouting(until deadline: ContinuousClock.Instant) -> Bool {
        while true {
            let rule = CommandRunner.run(CommandRunner.ipPath, ["rule", "show", "priority", "\(plan.rulePriority)"])
            let routes = CommandRunner.run(CommandRunner.ipPath, ["route", "show", "table", "\(plan.routingTable)"])
            let routes6 = CommandRunner.run(CommandRunner.ipPath, ["-6", "route", "show", "table", "\(plan.routingTable)"])
            let hasRule = rule.status == 0 && rule.output.contains("lookup \(plan.routingTable)")
            let hasRoute = [routes, routes6].contains { $0.status == 0 && $0.output.contains("dev ") }
            if hasRule && hasRoute { return true }
            guard ContinuousClock.now < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    private func waitForSocket(until deadline: ContinuousClock.Instant) throws(NetExtError) -> VICIConnection {
        let path = outside(IKEv2ClientPlan.socketPath)
        while true {
            if let connection = VICIConnection.connect(path: path, timeoutMilliseconds: 30_000) { return connection }
            let child = processID
            if child > 0, !ProcessSpawner.signal(0, to: child) {
                throw NetExtError(.connectionFailed, "charon ended before it opened its control socket\(logTail())")
            }
            guard ContinuousClock.now < deadline else { throw NetExtError(.timedOut, "charon did not open its control socket \(path) in time\(logTail())") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    // MARK: Watching

    /// Calls `down` once (on a thread of its own) when the IKE SA goes down or charon's socket
    /// closes; `stopWatching` ends the watch without calling it.
    func watch(_ down: @escaping @Sendable (String) -> Void) throws(NetExtError) {
        guard let vici = VICIConnection.connect(path: outside(IKEv2ClientPlan.socketPath), timeoutMilliseconds: 5000) else {
            throw NetExtError(.connectionFailed, "IKEv2: cannot reach charon's control socket to watch the connection")
        }
        try vici.register("ike-updown")
        try vici.register("child-updown")
        // Events come only on changes: from here on a read waits as long as it takes.
        vici.waitIndefinitely()
        lock.withLock { watcher = vici }
        let thread = Thread { [weak self] in
            let reason = Self.waitForDown(on: vici)
            defer { vici.close() }
            guard let self else { return }
            let stillWatched = self.lock.withLock { () -> Bool in
                guard self.watcher === vici else { return false }
                self.watcher = nil
                return true
            }
            if stillWatched { down(reason) }
        }
        thread.name = "netextd-ikev2-watch"
        thread.start()
    }

    /// Whether the SA is up now (asked on a connection of its own): `watch` registers after the
    /// connection came up, so a drop in between is caught by asking once more.
    func isUp() -> Bool {
        guard let vici = VICIConnection.connect(path: outside(IKEv2ClientPlan.socketPath), timeoutMilliseconds: 5000) else { return false }
        defer { vici.close() }
        guard let events = try? vici.request("list-sas", IKEv2ClientPlan.listSAs, streaming: "list-sa").events else { return false }
        return events.lazy.compactMap { IKEv2SAState(event: $0) }.first?.isUp == true
    }

    private static func waitForDown(on vici: VICIConnection) -> String {
        while true {
            let packet: VICIPacket
            do { packet = try vici.receive() } catch {
                return "charon's control socket closed (\(error.message))"
            }
            guard packet.kind == .event, packet.message[text: "up"] != "yes" else { continue }
            let sa = packet.message[section: IKEv2ClientPlan.connectionName]
            guard sa != nil else { continue }
            return packet.name == "child-updown" ? "the IKEv2 server removed the tunnel (child SA deleted)" : "the IKEv2 connection to the server ended"
        }
    }

    private func stopWatching() {
        let vici = lock.withLock { () -> VICIConnection? in
            defer { watcher = nil }
            return watcher
        }
        vici?.shutdown()
    }

    // MARK: Stopping

    /// Ends the IKE SA (the server hears a DELETE), at most `timeoutMilliseconds`.
    func disconnect(timeoutMilliseconds: Int = 3000) {
        stopWatching()
        guard let vici = VICIConnection.connect(path: outside(IKEv2ClientPlan.socketPath), timeoutMilliseconds: timeoutMilliseconds + 1000) else { return }
        defer { vici.close() }
        do { try vici.request("terminate", IKEv2ClientPlan.terminate(timeoutMilliseconds: timeoutMilliseconds)) } catch {
            logger.info("IKEv2: terminate", metadata: ["error": "\(error.message)"])
        }
    }

    /// Ends charon (SIGTERM, then SIGKILL after `patience`); charon removes its routes, rule,
    /// virtual address and TUN device on a clean exit. Returns once it is gone.
    func terminate(patience: Duration = .seconds(3)) {
        stopWatching()
        let child = lock.withLock { () -> Int32 in
            defer { pid = 0 }
            return pid
        }
        if child > 0 {
            _ = ProcessSpawner.signal(SIGTERM, to: child)
            let deadline = ContinuousClock.now + patience
            while ProcessSpawner.signal(0, to: child), ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
            _ = ProcessSpawner.signal(SIGKILL, to: child)
        }
        // A charon that was killed leaves its policy rule and routes behind; one that dropped to
        // its user cannot remove its pid file from the root-owned /run.
        applier.removeStale(tables: plan.routingTable...plan.routingTable, priorities: plan.rulePriority...plan.rulePriority)
        try? FileManager.default.removeItem(atPath: runDirectory + "/charon.pid")
    }

    /// A charon that an earlier netextd left running in `runDirectory` (its pid file) is ended.
    static func endLeftover(in runDirectory: String) {
        guard let text = try? String(contentsOfFile: runDirectory + "/charon.pid", encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 1,
              let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8), command.contains("charon"),
              // Ours, not another charon that got the pid: our directory is its /run.
              let mounts = try? String(contentsOfFile: "/proc/\(pid)/mountinfo", encoding: .utf8),
              mounts.split(separator: "\n").contains(where: { line in
                  // mountinfo: ID PARENT MAJOR:MINOR ROOT MOUNTPOINT … (proc(5)); our bind mount's
                  // root is this directory (relative to its file system, so compare the tail).
                  let fields = line.split(separator: " ")
                  guard fields.count > 4, fields[4] == "/run" else { return false }
                  let tail = fields[3].split(separator: "/").suffix(3).joined(separator: "/")
                  return tail.hasSuffix("ikev2/run") && runDirectory.hasSuffix("/" + tail)
              })
        else { return }
        _ = ProcessSpawner.signal(SIGKILL, to: pid)
    }

    // MARK: Helpers

    /// The last lines of charon's log, for an error message (charon logs no secrets at level 1).
    private func logTail() -> String {
        guard let text = try? String(contentsOfFile: outside(IKEv2ClientPlan.logPath), encoding: .utf8) else { return "" }
        let lines = text.split(separator: "\n").suffix(3).map { String($0.drop { $0 != "[" }) }.filter { !$0.isEmpty }
        return lines.isEmpty ? "" : " — charon: " + lines.joined(separator: " | ")
    }

    /// The interface holding one of `addresses` (`ip -o addr`).
    static func interface(holding addresses: [String]) -> String? {
        let listing = CommandRunner.run(CommandRunner.ipPath, ["-o", "address", "show"])
        guard listing.status == 0 else { return nil }
        for line in listing.output.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 4, let at = words.firstIndex(where: { $0 == "inet" || $0 == "inet6" }), at + 1 < words.count else { continue }
            let address = words[at + 1].split(separator: "/").first.map(String.init) ?? ""
            if addresses.contains(address) { return String(words[1]).split(separator: "@").first.map(String.init) }
        }
        return nil
    }
}
