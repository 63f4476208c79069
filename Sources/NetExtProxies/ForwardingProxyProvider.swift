import Foundation
import NetExt
import NetExtCore
import NetExtLinux
import Synchronization

/// The reference app proxy: every flow of the bound apps goes through an upstream proxy — a
/// SOCKS 5 server (RFC 1928, CONNECT) or an HTTP proxy (CONNECT) — named by the configuration's
/// server address (`host:port`). `providerConfiguration["upstream"]` chooses `socks5` (the
/// default) or `http-connect`; the configuration's user name and password, when set,
/// authenticate to it. `direct` passes every flow straight to where the app was going (a
/// pass-through proxy: the provider's own connections are never captured again), the start of
/// a provider that inspects or accounts flows, and the benchmark's measure of the hand-over. Each flow's bytes move between the app's socket and the upstream
/// connection inside the kernel (``AppProxyTCPFlow/relay(with:)``).
///
/// Run as a transparent proxy (provider type `transparent-proxy`), it asks for the flows
/// `providerConfiguration["include"]` names — comma-separated `PREFIX [PORT]` items such as
/// `0.0.0.0/0 443, ::/0 443` — and, when `providerConfiguration["hosts"]` lists host names
/// (comma-separated; a name also covers its subdomains), takes only flows to those names and
/// declines the rest, which netextd then sends on directly: "one website's flows through a
/// proxy".
public final class ForwardingProxyProvider: TransparentProxyProvider {
    /// The kind of upstream proxy.
    public enum Upstream: String, Sendable, CaseIterable {
        case socks5
        case httpConnect = "http-connect"
        case direct
    }

    /// What the provider was started with.
    struct Settings: Sendable {
        var upstream: Upstream
        var server: [SocketAddress]
        var serverText: String
        var username: String?
        var password: String?
        /// Transparent proxy: only flows to these names (and their subdomains) are taken.
        var hosts: [String] = []

        /// Whether a flow to `name` (as the app's resolver was answered; nil: unknown) is taken.
        func takes(_ name: String?) -> Bool {
            guard !hosts.isEmpty else { return true }
            guard let name = name?.lowercased() else { return false }
            return hosts.contains { name == $0 || name.hasSuffix("." + $0) }
        }
    }

    /// What happened to the flows so far.
    public struct Counters: Sendable, Hashable {
        public var forwarded = 0
        public var failed = 0
    }

    private let settings = Mutex<Settings?>(nil)
    private let counts = Mutex(Counters())
    /// The apps whose first flow was logged (each app once, so the log shows who uses the proxy).
    private let appsSeen = Mutex<Set<String>>([])
    private let handshakes = DispatchQueue(label: "netext-proxy-handshakes", attributes: .concurrent)
    /// How long connecting to the upstream proxy and its handshake may take.
    static let handshakeMilliseconds = 10_000

    public init() {}

    public var counters: Counters { counts.withLock { $0 } }

    public func startProxy(options: [String: JSONValue]?, context: AppProxyContext) async throws {
        var started = try Self.settings(
            serverAddress: context.serverAddress ?? "", providerConfiguration: context.providerConfiguration,
            username: context.username, password: context.password)
        if context.protocolConfiguration?.providerType == .transparentProxy {
            let (rules, hosts) = try Self.transparentRules(context.providerConfiguration)
            started.hosts = hosts
            settings.withLock { $0 = started }
            try await context.setTransparentProxySettings(TransparentProxyNetworkSettings(includedNetworkRules: rules))
            Self.log("transparent proxy for \(rules.map(\.description).joined(separator: ", "))\(hosts.isEmpty ? "" : "; taking only flows to \(hosts.joined(separator: ", "))")")
        }
        settings.withLock { $0 = started }
        Self.log(started.upstream == .direct ? "passing every flow straight to its destination" : "forwarding every flow to the \(started.upstream.rawValue) proxy at \(started.serverText)")
    }

    public func stopProxy(with reason: ProviderStopReason) async {
        let counters = self.counters
        Self.log("stopped (\(reason.rawValue)): \(counters.forwarded) flows forwarded, \(counters.failed) failed")
    }

    public func handleNewFlow(_ flow: AppProxyTCPFlow) -> Bool {
        guard let settings = settings.withLock({ $0 }) else { return false }
        if flow.direction == .inbound {
            // Another machine's connection to a service here (an inbound rule): passed on to
            // the service, whatever the upstream — the provider sees and counts it.
            if appsSeen.withLock({ $0.count < 1_024 && $0.insert("inbound \(flow.localEndpoint)").inserted }) {
                Self.log("first inbound flow from \(flow.remoteEndpoint) to \(flow.localEndpoint)")
            }
            flow.relay(connectingTo: flow.localEndpoint) { [self] result in
                counts.withLock { result.error == nil ? ($0.forwarded += 1) : ($0.failed += 1) }
            }
            return true
        }
        guard settings.takes(flow.remoteHostname) else { return false }
        let app = flow.metaData.sourceAppSigningIdentifier
        if appsSeen.withLock({ $0.count < 1_024 && $0.insert(app).inserted }) {
            let process = flow.metaData.processIdentifier.map { " (pid \($0)\(flow.metaData.executablePath.map { ", \($0)" } ?? ""))" } ?? ""
            Self.log("first flow of \(app.isEmpty ? "an unidentified app" : app)\(process) to \(flow.remoteEndpoint)")
        }
        if settings.upstream == .direct {
            // Connected and relayed by the relay's loop: no thread, no wait here.
            flow.relay(connectingTo: flow.remoteEndpoint) { [self] result in
                counts.withLock { result.error == nil ? ($0.forwarded += 1) : ($0.failed += 1) }
            }
            return true
        }
        // A proxy's handshake is a few blocking exchanges: on a pooled thread (reused, so no
        // thread is made per flow), free again once the relay has the connection.
        handshakes.async { [self] in forward(flow, settings: settings) }
        return true
    }

    /// A transparent proxy's rules (`include`: `PREFIX|HOST [PORT] [tcp|udp|any]`, comma-separated;
    /// TCP when no protocol is named; a host name makes a host rule: that host, or with two or
    /// more labels that domain; `inbound PREFIX [PORT]` takes other machines' connections from
    /// PREFIX to this machine's PORT) and host names (`hosts`); errors name the key.
    static func transparentRules(_ configuration: [String: JSONValue]) throws(NetExtError) -> (rules: [NetworkRule], hosts: [String]) {
        guard case .string(let include)? = configuration["include"] else {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'include': a transparent proxy needs the networks it takes, as 'PREFIX|HOST [PORT] [tcp|udp|any], …' (e.g. '0.0.0.0/0 443' or 'www.site.test 443')")
        }
        var rules: [NetworkRule] = []
        for item in include.split(separator: ",") {
            var words = item.split(separator: " ").map(String.init)
            if words.first == "inbound" {
                rules.append(try inboundRule(Array(words.dropFirst()), item: item))
                continue
            }
            var transport = NetworkRule.TransportProtocol.tcp
            if words.count > 1, let named = NetworkRule.TransportProtocol(rawValue: words[words.count - 1]) {
                transport = named
                words.removeLast()
            }
            let prefix = words.first.flatMap { try? IPPrefix($0) }
            let host = words.first.map { $0.lowercased() }.flatMap { prefix == nil && NetworkRule.isHostName($0) && NetworkRule.TransportProtocol(rawValue: $0) == nil ? $0 : nil }
            guard (1...2).contains(words.count), prefix != nil || host != nil else {
                throw NetExtError(.configurationInvalid, "providerConfiguration 'include': '\(item.trimmingCharacters(in: .whitespaces))' is not 'PREFIX|HOST [PORT] [tcp|udp|any]'")
            }
            let port = words.count == 2 ? try includedPort(words[1]) : nil
            if let prefix {
                rules.append(NetworkRule(destinationNetwork: prefix, destinationPort: port, protocol: transport))
            } else if let host {
                rules.append(NetworkRule(destinationHost: NetworkEndpoint(hostname: host, port: port ?? 0), protocol: transport))
            }
        }
        var hosts: [String] = []
        if let value = configuration["hosts"] {
            guard case .string(let text) = value else { throw NetExtError(.configurationInvalid, "providerConfiguration 'hosts': expected comma-separated host names") }
            hosts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        }
        return (rules, hosts)
    }

    /// `inbound PREFIX [PORT] [tcp]`: TCP connections from the remote network PREFIX to this
    /// machine's PORT (any port without one).
    static func inboundRule(_ words: [String], item: Substring) throws(NetExtError) -> NetworkRule {
        var words = words
        if words.last == "tcp" { words.removeLast() }
        guard (1...2).contains(words.count), let prefix = try? IPPrefix(words[0]) else {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'include': '\(item.trimmingCharacters(in: .whitespaces))' is not 'inbound PREFIX [PORT] [tcp]'")
        }
        let port = words.count == 2 ? try includedPort(words[1]) : nil
        return NetworkRule(remoteNetwork: prefix, localPort: port, protocol: .tcp, direction: .inbound)
    }

    /// A port of the include list (1…65535); the error names it.
    private static func includedPort(_ word: String) throws(NetExtError) -> UInt16 {
        guard let value = UInt16(word), value > 0 else {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'include': '\(word)' is not a port")
        }
        return value
    }

    /// A UDP flow: relayed by a thread of its own through the SOCKS server's UDP relay (UDP
    /// ASSOCIATE) or, with `direct`, straight to its destination; closed after a minute without
    /// datagrams either way. An HTTP proxy carries no UDP: declined.
    public func handleNewUDPFlow(_ flow: AppProxyUDPFlow, initialRemoteEndpoint: NetworkEndpoint) -> Bool {
        guard let settings = settings.withLock({ $0 }), settings.upstream != .httpConnect, settings.takes(flow.remoteHostname) else { return false }
        let app = flow.metaData.sourceAppSigningIdentifier
        if appsSeen.withLock({ $0.count < 1_024 && $0.insert("udp " + app).inserted }) {
            Self.log("first UDP flow of \(app.isEmpty ? "an unidentified app" : app) to \(flow.remoteEndpoint)")
        }
        let thread = Thread { [self] in
            do { try Self.relayDatagrams(flow, settings: settings) } catch {
                counts.withLock { $0.failed += 1 }
                Self.log("UDP flow to \(flow.remoteEndpoint): \(error)")
            }
            flow.close()
        }
        thread.name = "netext-proxy-udp"
        thread.stackSize = 256 * 1024
        thread.start()
        counts.withLock { $0.forwarded += 1 }
        return true
    }

    /// How long a UDP flow lives without a datagram either way.
    static let udpIdleMilliseconds: Int32 = 60_000

    /// Moves a UDP flow's datagrams until it has been idle for `udpIdleMilliseconds` or the SOCKS
    /// server ends the association (its TCP connection).
    static func relayDatagrams(_ flow: AppProxyUDPFlow, settings: Settings) throws(NetExtError) {
        let destination: SocketAddress
        var control: TCPSocket?
        if settings.upstream == .direct {
            guard let address = SocketAddress(flow.remoteEndpoint.hostname.contains(":") ? "[\(flow.remoteEndpoint.hostname)]:\(flow.remoteEndpoint.port)" : "\(flow.remoteEndpoint.hostname):\(flow.remoteEndpoint.port)") else {
                throw NetExtError(.configurationInvalid, "\(flow.remoteEndpoint) is not an address")
            }
            destination = address
        } else {
            let (socket, relay) = try udpAssociate(settings: settings)
            control = socket
            destination = relay
        }
        defer { control?.close() }
        let upstream: UDPSocket
        do {
            upstream = try UDPSocket(bindingTo: SocketAddress(address: destination.isIPv6 ? [UInt8](repeating: 0, count: 16) : [0, 0, 0, 0], port: 0), receiveBuffer: 256 << 10, sendBuffer: 256 << 10)
            try upstream.connect(to: destination)
        } catch {
            throw NetExtError(.connectionFailed, "cannot open the UDP path to \(destination): \(error)")
        }
        defer { upstream.close() }
        let wrap = settings.upstream != .direct
        let host = flow.remoteHostname ?? flow.remoteEndpoint.hostname
        // The first datagram (netextd received it before the flow had its socket) goes first.
        var pending: [FlowDatagram] = flow.takeFirstDatagram().map { [$0] } ?? []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536 + 300, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            for datagram in pending {
                let bytes = wrap ? SOCKS5Handshake.udpDatagram(to: host, port: flow.remoteEndpoint.port, data: datagram.data) : Array(datagram.data)
                guard let bytes else { continue }
                try? bytes.withUnsafeBytes { try upstream.send($0) }
            }
            pending = []
            let fds = [flow.fileDescriptor, upstream.fd] + (control.map { [$0.fd] } ?? [])
            let ready = DescriptorWait.readable(fds, milliseconds: udpIdleMilliseconds)
            if !ready.contains(true) { return }
            if ready.count > 2 && ready[2] { return }
            if ready[0] {
                guard case .success(let count) = DatagramIO.receive(flow.fileDescriptor, into: buffer) else { return }
                pending.append(FlowDatagram(data: Data(UnsafeRawBufferPointer(rebasing: buffer[0..<count])), endpoint: flow.remoteEndpoint))
            }
            if ready[1] {
                guard case .success(let count) = DatagramIO.receive(upstream.fd, into: buffer) else { return }
                let received = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                let offset = wrap ? SOCKS5Handshake.udpPayloadOffset(received) : 0
                if let offset {
                    try? flow.writeDatagrams([FlowDatagram(data: Data(received[offset...]), endpoint: flow.remoteEndpoint)])
                }
            }
        }
    }

    /// A UDP association with the SOCKS server: its TCP connection (the association lives as long
    /// as it does) and the relay's address.
    static func udpAssociate(settings: Settings) throws(NetExtError) -> (TCPSocket, SocketAddress) {
        let (socket, serverAddress) = try connectToServer(settings)
        do {
            try socksAuthenticate(socket, settings: settings)
            try send(socket, SOCKS5Handshake.udpAssociateRequest)
            let first5 = try read(socket, 5)
            let rest = try read(socket, try SOCKS5Handshake.remainingReplyLength(afterFirst5: first5))
            let bound = try SOCKS5Handshake.boundEndpoint(first5: first5, rest: rest)
            // An unspecified bound address means "the server's own".
            var relay = SocketAddress(bound.host.contains(":") ? "[\(bound.host)]:\(bound.port)" : "\(bound.host):\(bound.port)")
            if let found = relay, found.address.allSatisfy({ $0 == 0 }) { relay = SocketAddress(address: serverAddress.address, port: found.port) }
            guard let relay else { throw NetExtError(.connectionFailed, "the SOCKS server named its UDP relay '\(bound.host)', not an address") }
            socket.setTimeouts(milliseconds: 0)
            return (socket, relay)
        } catch let failure as SOCKS5Handshake.Failure {
            throw NetExtError(.connectionFailed, failure.description)
        } catch let error as NetExtError {
            throw error
        } catch {
            throw NetExtError(.connectionFailed, "\(error)")
        }
    }

    /// Reads the settings: `host:port` (a name is resolved now), the upstream kind, credentials.
    static func settings(serverAddress: String, providerConfiguration: [String: JSONValue], username: String?, password: String?) throws(NetExtError) -> Settings {
        var upstream = Upstream.socks5
        if let value = providerConfiguration["upstream"] {
            guard case .string(let text) = value, let chosen = Upstream(rawValue: text) else {
                throw NetExtError(.configurationInvalid, "providerConfiguration 'upstream': expected one of \(Upstream.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            upstream = chosen
        }
        let addresses: [SocketAddress]
        if upstream == .direct {
            addresses = []
        } else if let numeric = SocketAddress(serverAddress) {
            addresses = [numeric]
        } else {
            guard let colon = serverAddress.lastIndex(of: ":"), let port = UInt16(serverAddress[serverAddress.index(after: colon)...]), colon > serverAddress.startIndex else {
                throw NetExtError(.configurationInvalid, "serverAddress '\(serverAddress)': expected the upstream proxy as host:port")
            }
            do { addresses = try SocketAddress.resolve(host: String(serverAddress[..<colon]), port: port) } catch {
                throw NetExtError(.connectionFailed, "serverAddress '\(serverAddress)': \(error)")
            }
        }
        let credentials = (username?.isEmpty == false && password?.isEmpty == false) ? (username, password) : (nil, nil)
        return Settings(upstream: upstream, server: addresses, serverText: serverAddress, username: credentials.0, password: credentials.1)
    }

    private func forward(_ flow: AppProxyTCPFlow, settings: Settings) {
        do {
            // A proxy is sent the name when the app's resolver answered one (it resolves it
            // itself); the direct path connects to the address the app chose.
            let host = settings.upstream == .direct ? flow.remoteEndpoint.hostname : (flow.remoteHostname ?? flow.remoteEndpoint.hostname)
            let upstream = try Self.open(toward: host, port: flow.remoteEndpoint.port, settings: settings)
            counts.withLock { $0.forwarded += 1 }
            flow.relay(with: upstream.detach())
        } catch {
            counts.withLock { $0.failed += 1 }
            Self.log("flow to \(flow.remoteEndpoint) of \(flow.metaData.sourceAppSigningIdentifier.isEmpty ? "an unknown app" : flow.metaData.sourceAppSigningIdentifier): \(error)")
            flow.reset()
        }
    }

    /// A connection through the upstream proxy to `host`:`port`, ready to carry the flow.
    static func open(toward host: String, port: UInt16, settings: Settings) throws(NetExtError) -> TCPSocket {
        if settings.upstream == .direct {
            guard let address = SocketAddress(host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"),
                  let socket = TCPSocket.connect(to: address, timeoutMilliseconds: handshakeMilliseconds) else {
                throw NetExtError(.connectionFailed, "cannot connect to \(host):\(port)")
            }
            socket.setTimeouts(milliseconds: 0)
            return socket
        }
        let (socket, _) = try connectToServer(settings)
        switch settings.upstream {
        case .socks5: try socksHandshake(socket, host: host, port: port, settings: settings)
        case .httpConnect: try httpHandshake(socket, host: host, port: port, settings: settings)
        case .direct: break
        }
        socket.setTimeouts(milliseconds: 0)
        return socket
    }

    /// The SOCKS greeting, and the user name and password if the server asks for them.
    private static func socksAuthenticate(_ socket: TCPSocket, settings: Settings) throws {
        let offering = settings.username != nil
        try send(socket, SOCKS5Handshake.greeting(offeringPassword: offering))
        if try SOCKS5Handshake.passwordRequired(byMethodSelection: try read(socket, 2), offeredPassword: offering) {
            try send(socket, try SOCKS5Handshake.passwordRequest(username: settings.username ?? "", password: settings.password ?? ""))
            try SOCKS5Handshake.checkPasswordReply(try read(socket, 2))
        }
    }

    /// A connection to the first of the upstream proxy's addresses that answers.
    private static func connectToServer(_ settings: Settings) throws(NetExtError) -> (TCPSocket, SocketAddress) {
        for address in settings.server {
            if let socket = TCPSocket.connect(to: address, timeoutMilliseconds: handshakeMilliseconds) { return (socket, address) }
        }
        throw NetExtError(.connectionFailed, "cannot connect to the \(settings.upstream.rawValue) proxy at \(settings.serverText)")
    }

    /// Without credentials the greeting offers no authentication only, so the server's choice is
    /// known in advance: the CONNECT request goes in the same write as the greeting, and the
    /// handshake costs one round trip instead of two (the method choice is still checked).
    private static func socksHandshake(_ socket: TCPSocket, host: String, port: UInt16, settings: Settings) throws(NetExtError) {
        do {
            if settings.username == nil {
                try send(socket, SOCKS5Handshake.greeting(offeringPassword: false) + SOCKS5Handshake.connectRequest(host: host, port: port))
                _ = try SOCKS5Handshake.passwordRequired(byMethodSelection: try read(socket, 2), offeredPassword: false)
            } else {
                try socksAuthenticate(socket, settings: settings)
                try send(socket, try SOCKS5Handshake.connectRequest(host: host, port: port))
            }
            let rest = try SOCKS5Handshake.remainingReplyLength(afterFirst5: try read(socket, 5))
            _ = try read(socket, rest)
        } catch let failure as SOCKS5Handshake.Failure {
            throw NetExtError(.connectionFailed, failure.description)
        } catch let error as NetExtError {
            throw error
        } catch {
            throw NetExtError(.connectionFailed, "\(error)")
        }
    }

    private static func httpHandshake(_ socket: TCPSocket, host: String, port: UInt16, settings: Settings) throws(NetExtError) {
        try send(socket, HTTPConnectHandshake.request(host: host, port: port, username: settings.username, password: settings.password))
        // The head is read a byte at a time: nothing after it (the destination's first bytes)
        // may be taken from the socket before the relay starts.
        var head: [UInt8] = []
        while HTTPConnectHandshake.headEnd(in: head) == nil {
            guard head.count < HTTPConnectHandshake.maximumHead else {
                throw NetExtError(.connectionFailed, "the HTTP proxy's answer head is longer than \(HTTPConnectHandshake.maximumHead) bytes")
            }
            head += try read(socket, 1)
        }
        do { try HTTPConnectHandshake.checkResponse(head: head) } catch { throw NetExtError(.connectionFailed, error.description) }
    }

    private static func send(_ socket: TCPSocket, _ bytes: [UInt8]) throws(NetExtError) {
        guard socket.write(bytes) else { throw NetExtError(.connectionFailed, "the upstream proxy closed the connection during the handshake") }
    }

    private static func read(_ socket: TCPSocket, _ count: Int) throws(NetExtError) -> [UInt8] {
        guard let bytes = socket.read(exactly: count) else {
            throw NetExtError(.connectionFailed, "the upstream proxy closed the connection or did not answer within \(handshakeMilliseconds / 1000) s")
        }
        return bytes
    }

    static func log(_ line: String) {
        FileHandle.standardError.write(Data("netext-proxy-provider: \(line)\n".utf8))
    }
}
