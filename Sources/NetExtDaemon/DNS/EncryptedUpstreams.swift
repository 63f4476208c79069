import EncryptedDNS
import Foundation
import NIOCore
import NIOPosix
import NetExtCore

/// Makes the encrypted upstreams of system DNS settings: for each server address, in order, one
/// connection per event loop of the process's shared group (one a core), taken in turn. The servers' certificates are checked against the
/// system's CAs (`/etc/ssl/certs`), or against `NETEXT_DNS_CA_FILE` where set (a lab's CA).
enum EncryptedUpstreams {
    @Sendable
    static func make(for settings: DNSSettingsProtocol) throws(NetExtError) -> [[any EncryptedDNSUpstream]] {
        let group = MultiThreadedEventLoopGroup.singleton
        let loops = Array(group.makeIterator())
        var trust = try self.trust()
        trust.clientIdentityFile = settings.identityReference
        let mark = DNSStub.canMark ? DNSGuard.resolverMark : nil
        var made: [[any EncryptedDNSUpstream]] = []
        do {
            for server in settings.servers {
                guard let bytes = IPPrefix.parseAddress(server) else { throw NetExtError.invalid("servers: '\(server)' is not an IP address") }
                var connections: [any EncryptedDNSUpstream] = []
                for loop in loops {
                    switch settings.transport {
                    case .cleartext:
                        return []
                    case .overTLS:
                        let address = try SocketAddress(ipAddress: IPPrefix.format(bytes), port: 853)
                        connections.append(try DNSOverTLSUpstream(address: address, serverName: settings.serverName, trust: trust, mark: mark, eventLoop: loop))
                    case .overHTTPS:
                        connections.append(try DNSOverHTTPSUpstream(
                            url: settings.serverURL ?? "", address: bytes, trust: trust, mark: mark, usesGET: settings.httpMethod == .get, eventLoop: loop))
                    case .oblivious:
                        let configs = settings.obliviousConfigs.flatMap { Data(base64Encoded: $0) }.map { Array($0) }
                        connections.append(try ObliviousDoHUpstream(
                            proxyURL: settings.proxyURL ?? "", address: bytes, targetURL: settings.serverURL ?? "", configs: configs, trust: trust, mark: mark,
                            eventLoop: loop))
                    }
                }
                made.append(connections)
            }
        } catch let error as NetExtError {
            made.joined().forEach { $0.shutdown() }
            throw error
        } catch {
            made.joined().forEach { $0.shutdown() }
            throw NetExtError(.configurationInvalid, "cannot set up the encrypted DNS servers: \(error)")
        }
        return made
    }

    static func trust(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(NetExtError) -> DNSServerTrust {
        guard let caFile = environment["NETEXT_DNS_CA_FILE"], !caFile.isEmpty else { return .system }
        guard FileManager.default.isReadableFile(atPath: caFile) else {
            throw NetExtError(.configurationInvalid, "NETEXT_DNS_CA_FILE: cannot read \(caFile)")
        }
        return DNSServerTrust(caFile: caFile)
    }
}
