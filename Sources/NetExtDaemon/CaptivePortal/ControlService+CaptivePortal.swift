import Foundation
import NetExtCore
import NetExtIPC
import NetExtLinux

extension ControlService {
    /// `detectCaptivePortal`: checks the interface's name and the caller's right to name a
    /// connectivity check of its own, then runs the detection.
    func detectCaptivePortal(_ method: DetectCaptivePortal, identity: ClientIdentity) async throws -> CaptivePortalDetection {
        guard let interface = method.interface ?? NetworkInterfaces.defaultRouteInterface() else {
            throw NetExtError.invalid("interface: no default route, so no interface to check; name one")
        }
        guard (1...15).contains(interface.utf8.count), interface.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") }) else {
            throw NetExtError.invalid("interface: '\(interface)' is not an interface name (1 to 15 printable characters, no '/')")
        }
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
        let detection = await captivePortals.detect(interface: interface, probe: probe)
        logger.info("captive portal detection", metadata: [
            "interface": "\(interface)", "verdict": "\(detection.verdict.rawValue)",
            "announcement": "\(detection.announcement?.description ?? "-")",
        ])
        return detection
    }
}
