import EncryptedDNS
import Foundation
import NetExt
import NetExtCore
import NIOCore
import NIOPosix
import Synchronization

/// The reference DNS proxy: every DNS flow of the machine (UDP datagrams, TCP messages with
/// their two-byte length, RFC 1035 §4.2.2) is answered over DNS-over-HTTPS connections of its
/// own (one per core) (RFC 8484, HTTP/2) to the server its configuration names, reached at an address given
/// with it so the server's name is never looked up in the clear. Each answer is checked against
/// its question by the upstream; a query it cannot answer gets SERVFAIL, never a cleartext
/// fallback. It logs no names and no addresses: only counts, when it stops.
///
/// `providerConfiguration`: `doh-url` (`https://host[:port]/path`), `doh-address` (the server's
/// IP address), optionally `ca-file` (a PEM of the only CAs trusted; the system's otherwise).
final class DoHForwardingDNSProxy: DNSProxyProvider, Sendable {
    struct Settings: Sendable, Hashable {
        var url: String
        var address: [UInt8]
        var caFile: String?
    }

    struct Counters: Sendable, Hashable {
        var udpFlows = 0
        var tcpFlows = 0
        var answered = 0
        var failed = 0
        var malformed = 0
    }

    /// How long a query may wait for its answer, and a flow for its next query.
    static let answerMilliseconds = 5_000
    static let idle: Duration = .seconds(10)
    /// The most queries of one UDP flow waiting for their answers at once.
    static let maximumInFlight = 32

    /// One event loop, and one DoH connection on it, per core; each flow keeps to one of them,
    /// taken in turn (one connection's HTTP/2 stream limit, 100, is then shared by fewer flows).
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
    private let upstreams = Mutex<[DNSOverHTTPSUpstream]>([])
    private let nextUpstream = Atomic<Int>(0)
    private let counts = Mutex(Counters())

    /// The settings from a configuration; errors name the key.
    static func settings(_ configuration: [String: JSONValue]) throws(NetExtError) -> Settings {
        guard case .string(let url)? = configuration["doh-url"], url.hasPrefix("https://") else {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'doh-url': the DNS-over-HTTPS server's https URL is required (e.g. https://dns.example/dns-query)")
        }
        guard case .string(let text)? = configuration["doh-address"], let address = IPPrefix.parseAddress(text) else {
            throw NetExtError(.configurationInvalid, "providerConfiguration 'doh-address': the DoH server's IP address is required (its name is never looked up in the clear)")
        }
        var caFile: String?
        if let value = configuration["ca-file"] {
            guard case .string(let path) = value, path.hasPrefix("/") else {
                throw NetExtError(.configurationInvalid, "providerConfiguration 'ca-file': expected the absolute path of a PEM file")
            }
            caFile = path
        }
        return Settings(url: url, address: address, caFile: caFile)
    }

    func startProxy(options: [String: JSONValue]?, context: AppProxyContext) async throws {
        let settings = try Self.settings(context.providerConfiguration)
        var made: [DNSOverHTTPSUpstream] = []
        for loop in group.makeIterator() {
            do {
                made.append(try DNSOverHTTPSUpstream(url: settings.url, address: settings.address, trust: DNSServerTrust(caFile: settings.caFile), eventLoop: loop))
            } catch {
                throw NetExtError(.configurationInvalid, error.description)
            }
        }
        upstreams.withLock { $0 = made }
        Self.log("answering the machine's DNS over HTTPS")
    }

    func stopProxy(with reason: ProviderStopReason) async {
        for upstream in upstreams.withLock({ $0 }) { upstream.shutdown() }
        let counts = counts.withLock { $0 }
        Self.log("stopped (\(reason.rawValue)): \(counts.udpFlows) UDP and \(counts.tcpFlows) TCP flows, \(counts.answered) answers, \(counts.failed) failed, \(counts.malformed) malformed")
    }

    /// The connection a new flow keeps to (nil before the proxy started).
    private func takeUpstream() -> DNSOverHTTPSUpstream? {
        let all = upstreams.withLock { $0 }
        guard !all.isEmpty else { return nil }
        return all[nextUpstream.wrappingAdd(1, ordering: .relaxed).oldValue % all.count]
    }

    func handleNewUDPFlow(_ flow: AppProxyUDPFlow, initialRemoteEndpoint: NetworkEndpoint) -> Bool {
        guard let upstream = takeUpstream() else { return false }
        counts.withLock { $0.udpFlows += 1 }
        Task { await serve(flow, upstream: upstream) }
        return true
    }

    func handleNewFlow(_ flow: AppProxyTCPFlow) -> Bool {
        guard let upstream = takeUpstream() else { return false }
        counts.withLock { $0.tcpFlows += 1 }
        Task { await serve(flow, upstream: upstream) }
        return true
    }

    /// A UDP flow: each datagram one query, up to ``maximumInFlight`` of them in flight at once
    /// (a resolver sends many on one socket; answered one by one, a flow would carry one query
    /// per round trip), each answer written as it comes, to where its query came from. At the
    /// limit the flow is not read until an answer is written: the kernel holds the datagrams, as
    /// it would for a slow server. The flow ends after ``idle`` without a query, once its answers
    /// are written.
    private func serve(_ flow: AppProxyUDPFlow, upstream: DNSOverHTTPSUpstream) async {
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            while true {
                let datagrams: [FlowDatagram]
                do { datagrams = try await flow.readDatagrams(timeout: Self.idle) } catch { break }
                if datagrams.isEmpty { break }
                for datagram in datagrams {
                    if inFlight == Self.maximumInFlight {
                        await group.next()
                        inFlight -= 1
                    }
                    inFlight += 1
                    group.addTask {
                        guard let answer = await self.answer([UInt8](datagram.data), upstream: upstream) else { return }
                        try? flow.writeDatagrams([FlowDatagram(data: Data(answer), endpoint: datagram.endpoint)])
                    }
                }
            }
            await group.waitForAll()
        }
        flow.close()
    }

    /// A TCP flow: messages with their two-byte length, answered in order, until the app closes
    /// (one query at a time: resolvers use TCP for the odd long answer, not for volume).
    private func serve(_ flow: AppProxyTCPFlow, upstream: DNSOverHTTPSUpstream) async {
        var splitter = DNSStreamSplitter()
        reading: while true {
            let data: Data
            do { data = try await flow.readData() } catch { break }
            if data.isEmpty { break }
            for query in splitter.append(data) {
                guard let answer = await answer(query, upstream: upstream), let framed = DNSStreamSplitter.frame(answer) else { break reading }
                do { try await flow.write(Data(framed)) } catch { break reading }
            }
        }
        flow.closeWriteWithError(nil)
        flow.closeReadWithError(nil)
    }

    /// The server's answer to `query`, or SERVFAIL when it gave none; nil for a message that is
    /// not a query (dropped and counted).
    private func answer(_ query: [UInt8], upstream: DNSOverHTTPSUpstream) async -> [UInt8]? {
        let question: DNSQuery
        do { question = try DNSQuery(parsing: query) } catch {
            counts.withLock { $0.malformed += 1 }
            return nil
        }
        do {
            let answer = try await upstream.exchange(query, timeoutMilliseconds: Self.answerMilliseconds).get()
            counts.withLock { $0.answered += 1 }
            return answer
        } catch {
            counts.withLock { $0.failed += 1 }
            return question.serverFailure(for: query)
        }
    }

    static func log(_ message: String) {
        FileHandle.standardError.write(Data("netext-dns-proxy-provider: \(message)\n".utf8))
    }
}
