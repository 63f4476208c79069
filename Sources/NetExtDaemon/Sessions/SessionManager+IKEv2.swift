import Foundation
import IKEv2VICI
import NetExtCore
import NetExtIPC
import NetExtLinux

/// Personal VPNs: the session's "provider" is the built-in IKEv2 client (strongSwan's charon,
/// brought up by `PersonalVPNConnector`), driven by the same state machine as a packet tunnel
/// provider: the connector's events become the state machine's.
extension SessionManager {
    func launchIKEv2(_ settings: IKEv2Protocol, id: UUID, generation: Int, start: ProviderStart) {
        guard let directory = ikev2Directory else { return }
        let sharedSecret: String
        do throws(NetExtError) {
            sharedSecret = try settings.sharedSecretReference.flatMap { (reference) throws(NetExtError) in try secretLookup?(reference) } ?? ""
        } catch {
            apply(.providerFailed(error), to: id, generation: generation)
            return
        }
        let connector = PersonalVPNConnector(
            directory: directory, logger: logger, applier: applier,
            routingTable: Self.firstTable + Self.personalSlot, rulePriority: Self.firstTable + 4 * Self.personalSlot + 2)
        // Leave a second for the state machine's own start deadline to report a slow server.
        let deadline = ContinuousClock.now + startDeadline - .seconds(1)
        sessions[id]?.ikev2 = connector.start(settings, sharedSecret: sharedSecret, password: start.password, deadline: deadline) { event in
            Task {
                switch event {
                case .exited(let status): await self.providerExited(id: id, generation: generation, status: status)
                case .failed(let error): await self.apply(.providerFailed(error), to: id, generation: generation)
                case .connected(let connected): await self.ikev2Connected(connected, id: id, generation: generation)
                }
            }
        }
    }

    /// Ends a session's charon, if it still runs (it stopped, failed, or charon itself died:
    /// then what it left in the routing tables is removed too).
    func endIKEv2Client(of id: UUID) {
        guard let client = sessions[id]?.ikev2 else { return }
        sessions[id]?.ikev2 = nil
        PersonalVPNConnector.end(client)
    }

    private func ikev2Connected(_ connected: IKEv2Client.Connected, id: UUID, generation: Int) {
        guard let session = sessions[id], session.generation == generation, session.machine.status == .connecting else { return }
        // The interface is charon's (its TUN device); netextd records it for status and traffic
        // counters, and takes the DNS servers the server assigned unless another tunnel's are in
        // force (an enterprise tunnel's DNS wins, like its routes).
        let tunnel = TunnelInterface(fd: -1, name: connected.interface, slot: Self.personalSlot)
        do throws(NetExtError) {
            try dns.apply(DNSSettings(servers: connected.nameServers), for: id, rank: Self.personalSlot, interface: connected.interface, yieldToOthers: true)
        } catch {
            logger.warning("personal VPN: cannot install its DNS servers", metadata: ["error": "\(error.message)"])
        }
        usedSlots.insert(Self.personalSlot)
        sessions[id]?.tunnel = tunnel
        // charon reaches the server named in the configuration. No handshake time: charon rekeys
        // on its own schedule without telling netextd, so uptime is what netextd knows.
        var server: String?
        if case .personalVPN(let settings) = session.configuration.protocolConfiguration { server = settings.serverAddress }
        sessions[id]?.personalDetails = TunnelDetails(
            interface: connected.interface, mtu: TunDevice.mtu(of: connected.interface) ?? 0, addresses: connected.virtualAddresses,
            routes: connected.remoteTrafficSelectors, dnsServers: connected.nameServers, endpoint: server)
        logger.info("personal VPN (IKEv2) connected", metadata: [
            "interface": "\(connected.interface)", "addresses": "\(connected.virtualAddresses)",
            "routes": "\(connected.remoteTrafficSelectors)", "dns": "\(connected.nameServers)",
            "table": "\(session.ikev2?.plan.routingTable ?? 0)", "priority": "\(session.ikev2?.plan.rulePriority ?? 0)",
        ])
        apply(.providerStarted, to: id, generation: generation)
    }
}
