import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

extension ControlService {
    /// `detectCaptivePortal`: checks the interface's name and the caller's right to name a
    /// connectivity check of its own, then runs the detection.
    func detectCaptivePortal(_ method: DetectCaptivePortal, identity: ClientIdentity) async throws -> CaptivePortalDetection {
        let interface = try Self.interface(method.interface)
        var probe: ConnectivityProbe?
        if let url = method.probeURL {
            guard identity.mayModify else {
                throw NetExtError.permissionDenied("naming a connectivity check makes netextd send traffic there; it needs root or membership of netextd's admin group")
            }
            do throws(CaptivePortalError) { probe = try ConnectivityProbe.validated(url: url, expectedResponse: method.probeResponse) } catch {
                throw NetExtError.invalid("probeURL: \(error.description)")
            }
            guard probe?.url.scheme?.lowercased() == "http" else {
                throw NetExtError.invalid("probeURL: a connectivity check is plain http, so that a portal can answer it")
            }
        }
        let detection = await captivePortals.detect(interface: interface, probe: probe, guardInForce: await sessions.killSwitch.isInForce)
        if probe == nil { await captivePortalMonitor.record(detection, primaryInterface: await BlockingWork.run { NetworkInterfaces.defaultRouteInterface() }) }
        logger.info("captive portal detection", metadata: [
            "interface": "\(interface)", "verdict": "\(detection.verdict.rawValue)",
            "announcement": "\(detection.announcement?.description ?? "-")",
        ])
        return detection
    }

    /// `allowPortalLogin`: a user's programs past the kill switch on one interface for a while
    /// (root or the admin group: the control layer checks `modifiesState`).
    func allowPortalLogin(_ method: AllowPortalLogin) async throws -> PortalLoginGrant {
        let interface = try Self.interface(method.interface)
        guard let user = UserDatabase.user(named: method.user) else { throw NetExtError.invalid("user: no user named '\(method.user)'") }
        guard user.uid != 0 else {
            throw NetExtError.invalid("user: root's programs are the whole machine; name the user who logs in to the portal (a browser's, or one made for it)")
        }
        guard (0...PortalLoginGrant.maximumSeconds).contains(method.seconds) else {
            throw NetExtError.invalid("seconds: \(method.seconds) is not between 0 (end) and \(PortalLoginGrant.maximumSeconds)")
        }
        let killSwitch = sessions.killSwitch
        if method.seconds == 0 {
            let ended = await killSwitch.endPortalLogin(uid: user.uid)
            return PortalLoginGrant(user: user.name, uid: user.uid, interface: interface, seconds: 0, guardInForce: await killSwitch.isInForce, ended: ended)
        }
        let inForce = try await killSwitch.allowPortalLogin(uid: user.uid, interface: interface, seconds: method.seconds)
        return PortalLoginGrant(user: user.name, uid: user.uid, interface: interface, seconds: method.seconds, guardInForce: inForce)
    }

    /// An interface named in a request, checked, or the default route's.
    static func interface(_ requested: String?) throws -> String {
        guard let interface = requested ?? NetworkInterfaces.defaultRouteInterface() else {
            throw NetExtError.invalid("interface: there is no default route, so no interface to use; name one")
        }
        guard InterfaceName.isValid(interface) else {
            throw NetExtError.invalid("interface: '\(interface)' is not an interface name (1 to 15 letters, digits and -_.@)")
        }
        return interface
    }
}
