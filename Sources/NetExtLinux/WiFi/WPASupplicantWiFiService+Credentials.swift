import NetExtCore
#if canImport(Glibc)
import Glibc
#endif

/// Hotspot 2.0 (Passpoint) configurations as wpa_supplicant credentials (``WPASupplicantCredential``).
/// wpa_supplicant's D-Bus API can add and remove credentials but not list or read them, so
/// they go through its control interface (``WPASupplicantControl``), found by the interface's
/// `CtrlInterface` property — Debian's wpa_supplicant service runs one in /run/wpa_supplicant.
/// Passpoint selection needs `interworking=1`, `hs20=1` and, to join without being asked,
/// `auto_interworking=1` in wpa_supplicant's configuration: NetExt sets them when it adds a
/// credential (they are written to the file with it).
extension WPASupplicantWiFiService {
    /// The file of certificate authorities a hotspot's RADIUS server must chain to: the
    /// machine's bundle (Debian's ca-certificates), as Apple evaluates against its system roots.
    static let systemCABundle = "/etc/ssl/certs/ca-certificates.crt"

    struct OwnCredential {
        var interface: Interface
        var id: Int
        var name: String
    }

    func applyCredential(_ configuration: HotspotConfiguration, now: Double) throws(HotspotConfigurationError) {
        let bundle = Self.fileExists(Self.systemCABundle) ? Self.systemCABundle : nil
        let fields = try WPASupplicantCredential.fields(for: configuration, now: now, caBundle: bundle)
        let all = try interfaces()
        guard !all.isEmpty else { throw .systemConfiguration("wpa_supplicant runs no interface to keep the Hotspot 2.0 credential on.") }
        let replaced = try ownCredentials(now: nil).filter { $0.name == configuration.name }
        for each in all {
            let control = try control(for: each, required: true)!
            for credential in replaced where credential.interface.path == each.path {
                try control.request("REMOVE_CRED \(credential.id)")
            }
            try guarded { () throws(DBusError) in
                for setting in ["Interworking", "Hs20", "AutoInterworking"] {
                    try bus.setProperty(setting, of: Self.interfaceInterface, at: each.path, on: Self.service, to: .string("1"))
                }
            }
            let answer = try control.request("ADD_CRED")
            guard let id = Int(answer.prefix { $0 != "\n" }) else {
                throw .systemConfiguration("wpa_supplicant answered ADD_CRED with \"\(answer.prefix(40))\", not a credential id.")
            }
            do {
                for field in fields { try control.request("SET_CRED \(id) \(field.name) \(field.value)") }
            } catch {
                _ = try? control.request("REMOVE_CRED \(id)")  // no half-written credential stays
                throw error
            }
        }
        if !configuration.joinOnce { try save() }
        // Start a selection now; without a matching hotspot in range it finds none, and
        // auto_interworking joins one when it comes in range.
        for each in all {
            _ = try? bus.call(.methodCall(destination: Self.service, path: each.path, interface: Self.interfaceInterface, member: "InterworkingSelect"))
        }
    }

    /// NetExt's credentials on every interface that has a control interface; with `now`, the
    /// expired ones are removed (and the file saved) and left out.
    func ownCredentials(now: Double?) throws(HotspotConfigurationError) -> [OwnCredential] {
        var own: [OwnCredential] = []
        var removedExpired = false
        for each in try interfaces() {
            guard let control = try control(for: each, required: false) else { continue }
            for id in WPASupplicantCredential.ids(inList: try control.request("LIST_CREDS")) {
                // A credential without provisioning_sp answers FAIL: not NetExt's.
                guard let value = try? control.request("GET_CRED \(id) \(WPASupplicantCredential.markField)"),
                    let mark = WPASupplicantCredential.mark(inProvisioningSP: String(value.prefix { $0 != "\n" }))
                else { continue }
                if let now, let expires = mark.expires, expires <= now {
                    try control.request("REMOVE_CRED \(id)")
                    removedExpired = true
                } else {
                    own.append(OwnCredential(interface: each, id: id, name: mark.name))
                }
            }
        }
        if removedExpired { try save() }
        return own
    }

    /// Removes NetExt's credentials named `name`; true when there were any.
    func removeCredentials(named name: String) throws(HotspotConfigurationError) -> Bool {
        let own = try ownCredentials(now: nil).filter { $0.name == name }
        for credential in own {
            try control(for: credential.interface, required: true)!.request("REMOVE_CRED \(credential.id)")
        }
        return !own.isEmpty
    }

    /// The control interface of `each`; nil (or, when `required`, a refusal saying why) when
    /// wpa_supplicant runs it without one.
    func control(for each: Interface, required: Bool) throws(HotspotConfigurationError) -> WPASupplicantControl? {
        // A wpa_supplicant without the property (older than 2.10's API) has no control
        // interface NetExt could find either.
        let value: String
        do throws(DBusError) {
            value = try bus.property("CtrlInterface", of: Self.interfaceInterface, at: each.path, on: Self.service).stringValue ?? ""
        } catch .remote {
            value = ""
        } catch {
            throw Self.failure(error)
        }
        guard let directory = WPASupplicantControl.directory(fromCtrlInterface: value) else {
            guard required else { return nil }
            throw .systemConfiguration(
                "wpa_supplicant runs \(each.name) without a control interface (ctrl_interface), which NetExt needs to keep Hotspot 2.0 credentials; start it with -O /run/wpa_supplicant, as Debian's service does.")
        }
        do {
            return try WPASupplicantControl(directory: directory, interface: each.name)
        } catch {
            guard required else { return nil }
            throw error
        }
    }

    private static func fileExists(_ path: String) -> Bool {
        access(path, R_OK) == 0
    }
}
