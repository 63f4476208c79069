import Foundation
import Logging
import NetExtCore
import NetExtIPC
import NetExtLinux
import Synchronization

/// Hands an app proxy's flows to its provider (DESIGN.md, "Flows"): the connections nftables
/// `tproxy` delivers to netextd's transparent listeners are accepted by the kernel, and each
/// socket goes to the provider on its flow channel (descriptor 4) with what netextd knows of it
/// (``AppProxyFlowOffer``). The bytes never pass through netextd: it closes its copy of the
/// descriptor once the provider has it. One thread accepts and hands over; another reads the
/// provider's answers (taken or declined) and counts them.
final class AppProxyFlowDispatcher: Sendable {
    /// What happened to the flows so far.
    struct Counters: Sendable, Hashable {
        var offered = 0
        var handled = 0
        var declined = 0
        /// Connections reset because the provider could not be given them (it was gone).
        var lost = 0
        /// Connections reset, and datagrams dropped, while the proxy failed closed (its provider
        /// gone, its configuration's `includeAllNetworks` on).
        var refused = 0
        /// Answers from the provider that could not be read (malformed), or named no flow offered.
        var malformedAnswers = 0
        /// UDP flows handed over; datagrams dropped (a flow's before its socket took over, or
        /// without their original destination).
        var udpOffered = 0
        var datagramsDropped = 0
        var malformedDatagrams = 0
        /// Declined flows sent on directly (transparent proxy), and those that failed to connect.
        var sentDirect = 0
        var directFailed = 0
        /// Flows the provider holds now (offered and not declined, or taken and not ended).
        var live = 0
        /// Flows refused because the provider held its limit of flows (a connection reset, a
        /// datagram dropped).
        var overLimit = 0
    }

    let ports: FlowSteering.ProxyPorts
    private let listeners: TransparentListenerSet
    /// netextd's end of the provider's flow channel (owned by its `ProviderProcess`).
    private let channel: Int32
    /// The cgroups the configuration's apps live in now: by id (what sock_diag reports for a
    /// socket) and by relative path (for a process in a cgroup below them).
    private let apps = Mutex<(byID: [UInt64: AppSteeringController.ProxiedCgroup], byPath: [String: AppIdentifier], sole: AppIdentifier?)>(([:], [:], nil))
    private let counts = Mutex(Counters())
    private let stopped = Mutex(false)
    /// Set while the proxy fails closed: each flow is refused, and this is told of it.
    private let refusing = Mutex<(@Sendable () -> Void)?>(nil)
    private let logger: Logger
    private let configurationName: String

    /// Where flows' host names come from (nil: flows carry addresses only).
    private let names: ProxyDNSNames?

    /// A transparent proxy's: declined flows come back and are sent on directly.
    private let sendsDeclinedFlowsOn: Bool
    /// A flow offered and not answered yet: its ends (a returned socket must be one of them:
    /// netextd connects on its behalf, past every rule) and, for UDP, its first datagram (which
    /// reached netextd's listener, not the flow's socket).
    private struct Offered {
        var destination: SocketAddress
        var source: SocketAddress
        var firstDatagram: [UInt8]?
    }

    private let unanswered = Mutex<[UInt64: Offered]>([:])
    /// Flows of netextd's own resolver (``openResolverConnection(toHost:port:)``), numbered
    /// from the top of the ID space (the accepted flows count up from 1).
    private let resolverFlows = Mutex<(next: UInt64, open: Set<UInt64>)>((UInt64.max, []))
    /// The flows the provider holds: offered and not declined, or taken and not ended (its
    /// `ended` notices); at most `flowLimit`.
    private let live = Mutex<Set<UInt64>>([])
    private let flowLimit: Int
    /// When a refusal over the limit was last logged (at most one line every 10 s).
    private let limitLogged = Mutex<ContinuousClock.Instant?>(nil)
    /// The most flows waiting for the provider's answer before new ones are refused.
    static let maximumUnanswered = 4_096

    /// Opens the listeners; nothing is accepted before `start()`.
    init(channel: Int32, configurationName: String, names: ProxyDNSNames?, sendsDeclinedFlowsOn: Bool, flowLimit: Int, logger: Logger) throws(NetExtError) {
        self.names = names
        self.flowLimit = flowLimit
        self.sendsDeclinedFlowsOn = sendsDeclinedFlowsOn
        // A transparent proxy's rules may take inbound connections: listeners of their own.
        do { listeners = try TransparentListenerSet(inbound: sendsDeclinedFlowsOn) } catch {
            throw NetExtError(.connectionFailed, "the app proxy cannot listen for its apps' flows: \(error)")
        }
        ports = FlowSteering.ProxyPorts(
            tcp4: listeners.ipv4.port, tcp6: listeners.ipv6?.port, udp4: listeners.udp4?.port, udp6: listeners.udp6?.port,
            inbound4: listeners.inbound4?.port, inbound6: listeners.inbound6?.port)
        self.channel = channel
        self.logger = logger
        self.configurationName = configurationName
    }

    var counters: Counters {
        var counters = counts.withLock { $0 }
        counters.live = live.withLock { $0.count }
        return counters
    }

    /// Counts flow `id` as the provider's, unless it holds its limit already (then the refusal
    /// is counted, and logged now and then).
    private func takeSlot(_ id: UInt64) -> Bool {
        let taken = live.withLock { flows -> Bool in
            guard flows.count < flowLimit else { return false }
            flows.insert(id)
            return true
        }
        guard !taken else { return true }
        counts.withLock { $0.overLimit += 1 }
        let now = ContinuousClock.now
        let log = limitLogged.withLock { last -> Bool in
            guard last.map({ now - $0 >= .seconds(10) }) ?? true else { return false }
            last = now
            return true
        }
        if log {
            logger.warning("app proxy: the provider holds its limit of flows; new flows are refused until some end", metadata: [
                "configuration": "\(configurationName)", "limit": "\(flowLimit)", "refused": "\(counts.withLock { $0.overLimit })",
            ])
        }
        return false
    }

    /// Fails closed from now on: the provider is gone, the steering stays, and every flow that
    /// arrives is reset (a datagram dropped) instead of going direct; `flowArrived` is told of
    /// each (the session manager starts the provider again on demand).
    func refuseFlows(flowArrived: @escaping @Sendable () -> Void) {
        refusing.withLock { $0 = flowArrived }
    }

    /// The cgroups of the configuration's apps (the steering's scan).
    func setApps(_ cgroups: [AppSteeringController.ProxiedCgroup]) {
        var byID: [UInt64: AppSteeringController.ProxiedCgroup] = [:]
        var byPath: [String: AppIdentifier] = [:]
        for cgroup in cgroups {
            if let id = cgroup.id { byID[id] = cgroup }
            byPath[cgroup.path] = cgroup.app
        }
        // With a single app every flow is that app's: no lookup is needed to name it.
        let distinct = Set(cgroups.map(\.app))
        apps.withLock { $0 = (byID, byPath, distinct.count == 1 ? distinct.first : nil) }
    }

    /// Starts the accepting thread and the answer reader.
    func start() {
        let acceptor = Thread { [self] in acceptLoop() }
        acceptor.name = "netextd-proxy-accept"
        acceptor.start()
        let reader = Thread { [self] in readAnswers() }
        reader.name = "netextd-proxy-answers"
        reader.start()
    }

    /// Stops accepting and waits (at most 2 s) until the accepting thread has closed the
    /// listeners; connections not yet accepted are reset by the kernel.
    func stop() async {
        listeners.stop()
        for _ in 0..<200 where !isStopped { try? await Task.sleep(for: .milliseconds(10)) }
    }

    private func acceptLoop() {
        let owners = SocketOwnerLookup()
        var nextID: UInt64 = 1
        // A flow's datagrams that reach the listener after its first (before its own socket
        // took over) are dropped, not made into another flow: the app sends again.
        var recentDatagramFlows: [String: ContinuousClock.Instant] = [:]
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        while let arrivals = listeners.wait(milliseconds: 1_000, buffer: buffer, failed: { error in
            logger.warning("app proxy: cannot accept a flow", metadata: ["configuration": "\(configurationName)", "error": "\(error)"])
        }, dropped: { counts.withLock { $0.malformedDatagrams += 1 } }) {
            if let flowArrived = refusing.withLock({ $0 }) {
                for fd in arrivals.connections + arrivals.inboundConnections { StreamIO.reset(fd) }
                let refused = arrivals.connections.count + arrivals.inboundConnections.count + arrivals.datagrams.count
                if refused > 0 {
                    counts.withLock { $0.refused += refused }
                    flowArrived()
                }
                continue
            }
            for fd in arrivals.connections {
                let id = nextID
                nextID += 1
                hand(fd, id: id, owners: owners)
            }
            for fd in arrivals.inboundConnections {
                let id = nextID
                nextID += 1
                hand(fd, id: id, owners: owners, inbound: true)
            }
            let now = ContinuousClock.now
            if recentDatagramFlows.count > 4_096 { recentDatagramFlows = recentDatagramFlows.filter { now - $0.value < .seconds(1) } }
            for datagram in arrivals.datagrams {
                let key = "\(datagram.source)>\(datagram.destination)"
                if let seen = recentDatagramFlows[key], now - seen < .seconds(1) {
                    counts.withLock { $0.datagramsDropped += 1 }
                    continue
                }
                recentDatagramFlows[key] = now
                let id = nextID
                nextID += 1
                hand(datagram, id: id, owners: owners)
            }
        }
        listeners.close()
        stopped.withLock { $0 = true }
    }

    /// Whether the listeners are closed (the accepting thread has left).
    var isStopped: Bool { stopped.withLock { $0 } }

    /// Sends one accepted connection to the provider, then closes netextd's copy. An inbound
    /// one (another machine's connection to a service here) has no app: its remote end is that
    /// machine, its local end the service.
    private func hand(_ fd: Int32, id: UInt64, owners: SocketOwnerLookup, inbound: Bool = false) {
        guard let destination = SocketEndpoints.local(of: fd), let source = SocketEndpoints.remote(of: fd) else {
            // Reset before it was accepted: nothing to hand over.
            StreamIO.reset(fd)
            return
        }
        if inbound {
            offer(fd, id: id, destination: destination, source: source, AppProxyFlowOffer(
                id: id, transport: .tcp,
                remoteEndpoint: NetworkEndpoint(hostname: source.hostText, port: source.port),
                localEndpoint: NetworkEndpoint(hostname: destination.hostText, port: destination.port),
                sourceAppIdentifier: "", direction: .inbound))
            return
        }
        // The app's socket: its local end is our peer, its remote end our local one. With one
        // app cgroup steered, it is that cgroup's; else its cgroup (one sock_diag answer) names
        // the app. The process is the cgroup's only one where it has one, else found through
        // /proc (a process in a cgroup below the app's).
        var app: AppIdentifier?
        var process: SocketOwnerLookup.Process?
        let known = apps.withLock { $0 }
        if let sole = known.sole, known.byID.count == 1, let cgroup = known.byID.values.first {
            app = sole
            process = cgroup.procs.flatMap { owners.soleProcess(inCgroupProcs: $0) }
        } else if let cgroupID = owners.cgroupID(isIPv6: source.isIPv6, local: source.address, localPort: source.port, remote: destination.address, remotePort: destination.port),
                  let cgroup = known.byID[cgroupID] {
            app = cgroup.app
            process = cgroup.procs.flatMap { owners.soleProcess(inCgroupProcs: $0) }
        } else {
            process = owners.process(
                isIPv6: source.isIPv6, isTCP: true, local: source.address, localPort: source.port, remote: destination.address, remotePort: destination.port)
            app = self.app(of: process?.cgroup)
        }
        let flowOffer = AppProxyFlowOffer(
            id: id, transport: .tcp,
            remoteEndpoint: NetworkEndpoint(hostname: destination.hostText, port: destination.port),
            localEndpoint: NetworkEndpoint(hostname: source.hostText, port: source.port),
            remoteHostname: names?.name(for: destination.address),
            sourceAppIdentifier: app?.rawValue ?? "",
            processIdentifier: process?.pid, executablePath: process.flatMap { $0.executable.isEmpty ? nil : $0.executable })
        offer(fd, id: id, destination: destination, source: source, flowOffer)
    }

    /// Offers an accepted connection (its ends as netextd saw them) to the provider.
    private func offer(_ fd: Int32, id: UInt64, destination: SocketAddress, source: SocketAddress, _ offer: AppProxyFlowOffer) {
        // Should the provider die holding it, the kernel's close resets the app's connection at
        // once instead of ending it as if the server had finished.
        StreamIO.setResetOnClose(fd, true)
        guard takeSlot(id) else {
            StreamIO.reset(fd)
            return
        }
        guard admit(id, Offered(destination: destination, source: source)) else {
            StreamIO.reset(fd)
            _ = live.withLock { $0.remove(id) }
            counts.withLock { $0.lost += 1 }
            return
        }
        do {
            try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: fd, over: channel)
            SocketPair.close(fd)
            counts.withLock { $0.offered += 1 }
        } catch {
            StreamIO.reset(fd)
            _ = live.withLock { $0.remove(id) }
            _ = unanswered.withLock { $0.removeValue(forKey: id) }
            counts.withLock { $0.lost += 1 }
            logger.warning("app proxy: the provider could not be given a flow; reset", metadata: [
                "configuration": "\(configurationName)", "destination": "\(destination)", "error": "\(error)",
            ])
        }
    }

    /// Keeps a transparent proxy's offered flow until its answer (false: too many wait already).
    private func admit(_ id: UInt64, _ offered: Offered) -> Bool {
        guard sendsDeclinedFlowsOn else { return true }
        return unanswered.withLock { waiting -> Bool in
            guard waiting.count < Self.maximumUnanswered else { return false }
            waiting[id] = offered
            return true
        }
    }

    /// Makes a UDP flow's own socket and hands it over with the first datagram. Its app is the
    /// configuration's when it has one, else the one whose cgroup holds the process owning the
    /// sender's socket (sock_diag, then /proc).
    private func hand(_ datagram: TransparentDatagramSocket.Datagram, id: UInt64, owners: SocketOwnerLookup) {
        guard takeSlot(id) else {
            counts.withLock { $0.datagramsDropped += 1 }
            return
        }
        guard admit(id, Offered(destination: datagram.destination, source: datagram.source, firstDatagram: datagram.payload)) else {
            _ = live.withLock { $0.remove(id) }
            counts.withLock { $0.lost += 1 }
            return
        }
        let fd: Int32
        do { fd = try TransparentDatagramSocket.flowSocket(for: datagram) } catch {
            _ = live.withLock { $0.remove(id) }
            _ = unanswered.withLock { $0.removeValue(forKey: id) }
            counts.withLock { $0.lost += 1 }
            logger.warning("app proxy: cannot make a UDP flow's socket", metadata: ["configuration": "\(configurationName)", "error": "\(error)"])
            return
        }
        let known = apps.withLock { $0 }
        var app = known.sole
        var process: SocketOwnerLookup.Process?
        if app == nil {
            process = owners.process(
                isIPv6: datagram.source.isIPv6, isTCP: false, local: datagram.source.address, localPort: datagram.source.port,
                remote: datagram.destination.address, remotePort: datagram.destination.port)
            app = self.app(of: process?.cgroup)
        }
        let offer = AppProxyFlowOffer(
            id: id, transport: .udp,
            remoteEndpoint: NetworkEndpoint(hostname: datagram.destination.hostText, port: datagram.destination.port),
            localEndpoint: NetworkEndpoint(hostname: datagram.source.hostText, port: datagram.source.port),
            remoteHostname: names?.name(for: datagram.destination.address),
            sourceAppIdentifier: app?.rawValue ?? "", processIdentifier: process?.pid,
            executablePath: process.flatMap { $0.executable.isEmpty ? nil : $0.executable }, initialDatagram: datagram.payload)
        do {
            try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: fd, over: channel)
            counts.withLock {
                $0.offered += 1
                $0.udpOffered += 1
            }
        } catch {
            _ = live.withLock { $0.remove(id) }
            _ = unanswered.withLock { $0.removeValue(forKey: id) }
            counts.withLock { $0.lost += 1 }
        }
        SocketPair.close(fd)
    }

    /// The app a process's cgroup (`/a/b/c` from /proc) belongs to: its own or its nearest
    /// ancestor's, among the configuration's apps' cgroups.
    private func app(of cgroup: String?) -> AppIdentifier? {
        guard var path = cgroup.map({ String($0.drop { $0 == "/" }) }) else { return nil }
        let known = apps.withLock { $0.byPath }
        while !path.isEmpty {
            if let app = known[path] { return app }
            guard let slash = path.lastIndex(of: "/") else { break }
            path = String(path[..<slash])
        }
        return nil
    }

    /// A declined flow of a transparent proxy goes where the app sent it, on a connection (or
    /// connected UDP socket) of netextd's that the steering lets by (``FlowSteering/bypassMark``);
    /// bytes move in the kernel (TCP) or on the datagram relay's thread (UDP, its first datagram
    /// sent first). The socket must be the flow offered: a provider cannot have netextd connect
    /// anywhere else.
    private func sendDirect(_ fd: Int32, offered: Offered) {
        guard SocketEndpoints.local(of: fd) == offered.destination, SocketEndpoints.remote(of: fd) == offered.source else {
            StreamIO.reset(fd)
            counts.withLock { $0.malformedAnswers += 1 }
            return
        }
        if let first = offered.firstDatagram {
            do {
                guard let relay = DatagramRelay.shared else { throw SystemError("datagram relay", errno: ENOMEM) }
                try relay.relay(app: fd, connectingTo: offered.destination, mark: FlowSteering.bypassMark, first: first) { _ in }
                counts.withLock { $0.sentDirect += 1 }
            } catch {
                SocketPair.close(fd)
                counts.withLock { $0.directFailed += 1 }
            }
            return
        }
        guard let relay = FlowRelay.shared else {
            StreamIO.reset(fd)
            counts.withLock { $0.directFailed += 1 }
            return
        }
        do {
            try relay.relay(app: fd, connectingTo: offered.destination, mark: FlowSteering.bypassMark) { [self] outcome in
                if outcome.error != nil, outcome.appToUpstream == 0, outcome.upstreamToApp == 0 { counts.withLock { $0.directFailed += 1 } }
            }
            counts.withLock { $0.sentDirect += 1 }
        } catch {
            StreamIO.reset(fd)
            counts.withLock { $0.directFailed += 1 }
        }
    }

    /// A connection of netextd's own to `host`:`port` handed to the provider as a flow of
    /// ``RelayProtocol/resolverFlowSource`` (a relay's DNS-over-HTTPS server, reached through the
    /// relays by name): returns netextd's end of a stream socket pair whose other end the
    /// provider carries. Throws when the provider cannot be given it.
    func openResolverConnection(toHost host: String, port: UInt16) throws(NetExtError) -> Int32 {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw NetExtError(.connectionFailed, "cannot make a socket pair for the relay's DNS server: \(String(cString: strerror(errno)))")
        }
        let id = resolverFlows.withLock { flows -> UInt64 in
            defer { flows.next -= 1 }
            flows.open.insert(flows.next)
            return flows.next
        }
        guard takeSlot(id) else {
            _ = resolverFlows.withLock { $0.open.remove(id) }
            SocketPair.close(fds[0])
            SocketPair.close(fds[1])
            throw NetExtError(.connectionFailed, "the relay provider holds its limit of flows")
        }
        let offer = AppProxyFlowOffer(
            id: id, transport: .tcp, remoteEndpoint: NetworkEndpoint(hostname: "0.0.0.0", port: port), localEndpoint: NetworkEndpoint(hostname: "0.0.0.0", port: 0),
            remoteHostname: host, sourceAppIdentifier: RelayProtocol.resolverFlowSource)
        do {
            try DescriptorMessages.send(AppProxyFlowCodec.encode(offer), descriptor: fds[1], over: channel)
            SocketPair.close(fds[1])
            counts.withLock { $0.offered += 1 }
            return fds[0]
        } catch {
            _ = resolverFlows.withLock { $0.open.remove(id) }
            _ = live.withLock { $0.remove(id) }
            SocketPair.close(fds[0])
            SocketPair.close(fds[1])
            throw NetExtError(.connectionFailed, "the relay provider could not be given the DNS server's connection: \(error)")
        }
    }

    private func readAnswers() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let received: (length: Int, descriptor: Int32?)
            do { received = try DescriptorMessages.receive(into: buffer, over: channel) } catch { return }
            if received.length == 0 {
                if let stray = received.descriptor { SocketPair.close(stray) }
                return
            }
            let answer: AppProxyFlowCodec.Answer
            do {
                switch try AppProxyFlowCodec.decodeProviderMessage(UnsafeRawBufferPointer(rebasing: buffer[..<received.length])) {
                case .answer(let answered): answer = answered
                case .ended(let flowID):
                    if let stray = received.descriptor { SocketPair.close(stray) }
                    _ = live.withLock { $0.remove(flowID) }
                    continue
                }
            } catch {
                if let stray = received.descriptor { SocketPair.close(stray) }
                counts.withLock { $0.malformedAnswers += 1 }
                logger.warning("app proxy: malformed answer from the provider", metadata: ["configuration": "\(configurationName)", "error": "\(error)"])
                continue
            }
            counts.withLock { answer.handled ? ($0.handled += 1) : ($0.declined += 1) }
            if !answer.handled { _ = live.withLock { $0.remove(answer.flowID) } }
            if resolverFlows.withLock({ $0.open.remove(answer.flowID) }) != nil {
                // netextd's own: a declined one is closed (its queries fail), never sent direct.
                if let returned = received.descriptor { SocketPair.close(returned) }
                continue
            }
            let offered = sendsDeclinedFlowsOn ? unanswered.withLock { $0.removeValue(forKey: answer.flowID) } : nil
            guard let returned = received.descriptor else { continue }
            guard !answer.handled, let offered else {
                // Only a transparent proxy gives sockets back, and only with a flow it declined.
                SocketPair.close(returned)
                counts.withLock { $0.malformedAnswers += 1 }
                continue
            }
            sendDirect(returned, offered: offered)
        }
    }
}
