import NetExtCore

/// What netextd tells strongSwan's charon to run a personal VPN (Apple's `NEVPNProtocolIKEv2`),
/// computed without touching the system: the daemon's settings file, and the VICI requests that
/// load the connection and its secret, start it and end it.
///
/// charon runs in a mount namespace of its own whose `/run` is `runDirectory` (so its pid file,
/// VICI socket, log and the DNS servers it learns never meet another charon's), with the
/// `kernel-libipsec` plugin (ESP in user space over a TUN device: this kernel has no ESP), and
/// installs its routes into `routingTable` behind a policy rule at `rulePriority` — netextd picks
/// a priority after every packet tunnel's, so that an enterprise tunnel wins where the two route
/// the same destinations.
public struct IKEv2ClientPlan: Sendable, Hashable {
    public var settings: IKEv2Protocol
    public var routingTable: Int
    public var rulePriority: Int
    /// The user and group charon drops to once its sockets, TUN device and log are open (it keeps
    /// only the capabilities it needs: CAP_NET_ADMIN, CAP_NET_RAW, …); nil: it stays root.
    public var user: String?
    public var group: String?

    /// The IKE and child SA's name in charon.
    public static let connectionName = "netext"
    /// Where charon's files are, as charon sees them (its private `/run`).
    public static let socketPath = "/run/charon.vici"
    /// In a directory of its own, the one place charon writes after dropping privileges.
    public static let resolverDirectory = "/run/dns"
    public static let resolverPath = "/run/dns/resolv.conf"
    public static let logPath = "/run/charon.log"
    public static let settingsPath = "/run/strongswan.conf"

    /// The charon plugins the client needs: crypto (openssl, with the built-in ones as fallback),
    /// ESP in user space, the kernel's routing interface, VICI, DNS from the configuration payload,
    /// and EAP-MSCHAPv2 for username/password authentication.
    public static let plugins = [
        "random", "nonce", "aes", "sha1", "sha2", "hmac", "gmp", "openssl", "kdf", "pem", "pkcs1", "x509", "pubkey",
        "kernel-libipsec", "kernel-netlink", "socket-default", "vici", "resolve", "attr", "eap-identity", "eap-mschapv2",
    ]

    public init(settings: IKEv2Protocol, routingTable: Int, rulePriority: Int, user: String? = nil, group: String? = nil) {
        self.settings = settings
        self.routingTable = routingTable
        self.rulePriority = rulePriority
        self.user = user
        self.group = group
    }

    /// How the client proves who it is and checks the server.
    public enum Authentication: Sendable, Hashable {
        /// Both sides with the shared secret (`AuthenticationMethod` SharedSecret).
        case sharedSecret
        /// The client with EAP-MSCHAPv2 (username and password), the server with the shared secret.
        case extendedWithSharedSecret
    }

    /// The authentication the settings ask for, or an error naming what is missing or unsupported.
    public func authentication(hasSharedSecret: Bool, hasPassword: Bool) throws(NetExtError) -> Authentication {
        switch settings.authenticationMethod {
        case .sharedSecret:
            guard hasSharedSecret else { throw .invalid("IKEv2: authenticationMethod is sharedSecret, but no shared secret is stored (SharedSecret in the profile)") }
            guard settings.useExtendedAuthentication else { return .sharedSecret }
            guard settings.username?.isEmpty == false else { throw .invalid("IKEv2: useExtendedAuthentication needs a username (AuthName)") }
            guard hasPassword else { throw .invalid("IKEv2: useExtendedAuthentication needs a password (AuthPassword)") }
            return .extendedWithSharedSecret
        case .certificate:
            throw .invalid("IKEv2: certificate authentication is not supported by NetExt's IKEv2 client yet; use SharedSecret")
        case .none:
            throw .invalid("IKEv2: authenticationMethod None (server certificate + EAP) is not supported by NetExt's IKEv2 client yet; use SharedSecret")
        }
    }

    /// The identity the client claims (`LocalIdentifier`), or nil for its IP address.
    public var localIdentity: String? { settings.localIdentifier.flatMap { $0.isEmpty ? nil : $0 } }
    /// The identity the server must prove (`RemoteIdentifier`, else the server's address).
    public var remoteIdentity: String { settings.remoteIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? settings.serverAddress }

    /// charon's settings file (`strongswan.conf` syntax). No secret is in it.
    public var daemonSettings: String {
        let identity = [user.map { "  user = \($0)\n" }, group.map { "  group = \($0)\n" }].compactMap { $0 }.joined()
        return """
        # Written by netextd for one personal VPN; charon reads it as \(Self.settingsPath) in its own mount namespace.
        charon {
        \(identity)  load = \(Self.plugins.joined(separator: " "))
          port = 0
          port_nat_t = 0
          install_virtual_ip = yes
          routing_table = \(routingTable)
          routing_table_prio = \(rulePriority)
          # A server that does not answer is given up after about 12 s (2 s, 3.6 s, 6.5 s).
          retransmit_tries = 2
          retransmit_timeout = 2.0
          retransmit_base = 1.8
          filelog {
            netext {
              path = \(Self.logPath)
              default = 1
              flush_line = yes
              time_format = %F %T
            }
          }
          syslog {
            daemon {
              default = -1
            }
          }
          plugins {
            vici {
              socket = unix://\(Self.socketPath)
            }
            resolve {
              file = \(Self.resolverPath)
            }
          }
        }

        """
    }

    /// The VICI `load-conn` request.
    public func loadConnection(authentication: Authentication) -> VICIMessage {
        var local: [VICIMessage.Entry] = []
        switch authentication {
        case .sharedSecret: local.append(.text("auth", "psk"))
        case .extendedWithSharedSecret:
            local.append(.text("auth", "eap-mschapv2"))
            if let username = settings.username { local.append(.text("eap_id", username)) }
        }
        if let localIdentity { local.append(.text("id", localIdentity)) }
        let remote: [VICIMessage.Entry] = [.text("auth", "psk"), .text("id", remoteIdentity)]
        let child: [VICIMessage.Entry] = [
            .list("remote_ts", ["0.0.0.0/0", "::/0"]),
            .text("start_action", "none"),
            .text("close_action", "none"),
            .text("dpd_action", "clear"),
        ]
        return VICIMessage([
            .section(Self.connectionName, [
                .text("version", "2"),
                .list("remote_addrs", [settings.serverAddress]),
                .list("vips", ["0.0.0.0", "::"]),
                .text("mobike", "yes"),
                .text("dpd_delay", "10s"),
                .text("unique", "replace"),
                .section("local", local),
                .section("remote", remote),
                .section("children", [.section(Self.connectionName, child)]),
            ]),
        ])
    }

    /// The VICI `load-shared` requests for the secrets (the shared secret bound to both
    /// identities; the EAP password to the username).
    public func loadSecrets(authentication: Authentication, sharedSecret: String, password: String?) -> [VICIMessage] {
        var owners = [remoteIdentity]
        if let localIdentity { owners.insert(localIdentity, at: 0) }
        var messages = [VICIMessage([.text("id", "netext-ike"), .text("type", "IKE"), .text("data", sharedSecret), .list("owners", owners)])]
        if authentication == .extendedWithSharedSecret, let username = settings.username, let password {
            messages.append(VICIMessage([.text("id", "netext-eap"), .text("type", "EAP"), .text("data", password), .list("owners", [username])]))
        }
        return messages
    }

    /// The VICI `initiate` request (waits up to `timeoutMilliseconds` for the child SA).
    public static func initiate(timeoutMilliseconds: Int) -> VICIMessage {
        VICIMessage([.text("child", connectionName), .text("ike", connectionName), .text("timeout", "\(timeoutMilliseconds)"), .text("init-limits", "no")])
    }

    /// The VICI `terminate` request for the IKE SA (waits up to `timeoutMilliseconds`).
    public static func terminate(timeoutMilliseconds: Int) -> VICIMessage {
        VICIMessage([.text("ike", connectionName), .text("timeout", "\(timeoutMilliseconds)")])
    }

    /// The VICI `list-sas` request for the client's IKE SA.
    public static let listSAs = VICIMessage([.text("ike", connectionName), .text("noblock", "yes")])
}

/// The client's IKE SA as charon reports it (a `list-sa` event).
public struct IKEv2SAState: Sendable, Hashable {
    /// IKE SA state (`ESTABLISHED`, `CONNECTING`, `DELETING`, …).
    public var state: String
    public var remoteHost: String?
    /// The addresses the server assigned (the configuration payload's virtual IPs).
    public var virtualAddresses: [String]
    /// The child SA's state (`INSTALLED`, …) and the networks it reaches, if there is one.
    public var childState: String?
    public var remoteTrafficSelectors: [String]
    public var bytesIn: UInt64
    public var bytesOut: UInt64

    /// Reads the section for `name` from a `list-sa` event; nil if the event is about another SA.
    public init?(event: VICIMessage, name: String = IKEv2ClientPlan.connectionName) {
        guard let sa = event[section: name] else { return nil }
        state = sa[text: "state"] ?? "UNKNOWN"
        remoteHost = sa[text: "remote-host"]
        virtualAddresses = sa[list: "local-vips"] ?? []
        let child = sa[section: "child-sas"]?.sections.first { $0.message[text: "name"] == name }?.message
        childState = child?[text: "state"]
        remoteTrafficSelectors = child?[list: "remote-ts"] ?? []
        bytesIn = child?[text: "bytes-in"].flatMap { UInt64($0) } ?? 0
        bytesOut = child?[text: "bytes-out"].flatMap { UInt64($0) } ?? 0
    }

    /// Whether traffic can flow: the IKE SA is established and its child SA installed.
    public var isUp: Bool { state == "ESTABLISHED" && childState == "INSTALLED" }
}

extension IKEv2ClientPlan {
    /// Why an attempt failed, in words, from charon's narration of it (its `control-log` lines):
    /// the server's refusal (an IKEv2 notify error, RFC 7296 §3.10.1) or the last thing that went
    /// wrong, then charon's own summary.
    public static func failureReason(narration: [String], errorMessage: String?) -> String {
        let notify = narration.last { $0.contains("notify error") || $0.contains("AUTHENTICATION_FAILED") }
        let failure = narration.last { line in
            ["failed", "no response", "giving up", "timeout", "not found", "no proposal", "unable"].contains { line.lowercased().contains($0) }
        }
        let detail = notify.map { "the server refused the connection (\($0))" } ?? failure ?? narration.last
        let summary = errorMessage ?? "the connection could not be established"
        guard let detail, detail != summary else { return summary }
        return "\(summary): \(detail)"
    }

    /// The name servers in the file charon's `resolve` plugin writes (`nameserver ADDRESS # …`).
    public static func nameServers(inResolverFile text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver", IPPrefix.parseAddress(String(words[1])) != nil else { return nil }
            return String(words[1])
        }
    }
}
