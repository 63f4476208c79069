import Foundation
import IKEv2VICI
import Logging
import NetExtCore
import NetExtLinux

/// Brings up a personal VPN (Apple's built-in IKEv2 client) with strongSwan's charon, on threads
/// of its own, and reports what happens as events: charon exited, the connection failed or went
/// down, or it came up. The session manager maps the events onto the same state machine as a
/// packet tunnel provider's messages; this type knows charon, the session manager does not.
struct PersonalVPNConnector: Sendable {
    enum Event: Sendable {
        /// charon ended, with its `waitpid` status.
        case exited(Int32)
        /// The connection could not be made, or went down after it was.
        case failed(NetExtError)
        case connected(IKEv2Client.Connected)
    }

    let directory: String
    let logger: Logger
    let applier: any NetworkApplier
    /// Where the connection's routes go (the personal VPN's slot of netextd's tables).
    let routingTable: Int
    let rulePriority: Int

    /// Starts charon for `settings` and connects before `deadline`; `report` gets every event,
    /// on whatever thread it happens. Returns the client, to be ended with `end(_:)`.
    func start(
        _ settings: IKEv2Protocol, sharedSecret: String, password: String?, deadline: ContinuousClock.Instant,
        report: @escaping @Sendable (Event) -> Void
    ) -> IKEv2Client {
        let account = IKEv2Client.account()
        if account == nil {
            logger.warning("personal VPN: charon runs as root; create its user to drop privileges (useradd --system --no-create-home --shell /usr/sbin/nologin \(IKEv2Client.userName))")
        }
        let plan = IKEv2ClientPlan(settings: settings, routingTable: routingTable, rulePriority: rulePriority, user: account?.user, group: account?.group)
        let client = IKEv2Client(plan: plan, directory: directory, logger: logger, applier: applier)
        Thread.detachNewThread {
            do throws(NetExtError) {
                try client.launch()
                let pid = client.processID
                Thread.detachNewThread { report(.exited(ProcessSpawner.waitForExit(pid: pid))) }
                let connected = try client.connect(sharedSecret: sharedSecret, password: password, deadline: deadline)
                try client.watch { reason in report(.failed(NetExtError(.connectionFailed, reason))) }
                guard client.isUp() else { throw NetExtError(.connectionFailed, "IKEv2: the connection ended as it came up") }
                report(.connected(connected))
            } catch {
                report(.failed(error))
            }
        }
        return client
    }

    /// Ends charon (on a thread of its own: it waits for charon to go); what it left in the
    /// routing tables is removed.
    static func end(_ client: IKEv2Client) {
        Thread.detachNewThread { client.terminate() }
    }
}
