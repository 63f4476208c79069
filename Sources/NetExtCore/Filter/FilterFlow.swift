/// One network flow as a content filter sees it (Apple's `NEFilterSocketFlow`): its endpoints,
/// direction, the program that owns it, and what netextd learned of its destination.
public struct FilterFlow: Sendable, Hashable, Codable, Identifiable {
    public enum Direction: String, Sendable, Hashable, Codable {
        /// A program on this machine opened the flow.
        case outbound
        /// Another machine opened the flow to a program here.
        case inbound
    }

    /// netextd's number for the flow, unique while netextd runs.
    public var id: UInt64
    public var direction: Direction
    public var transport: FlowProtocol
    public var localAddress: String
    public var localPort: UInt16
    public var remoteAddress: String
    public var remotePort: UInt16
    /// The remote host's name when netextd knows it: the TLS server name, the HTTP Host.
    public var remoteHostname: String?
    /// For cleartext HTTP, the requested URL.
    public var url: String?
    /// The program behind the flow, as far as the kernel tells.
    public var sourceApplication: SourceApplication?

    public init(
        id: UInt64, direction: Direction, transport: FlowProtocol, localAddress: String, localPort: UInt16,
        remoteAddress: String, remotePort: UInt16, remoteHostname: String? = nil, url: String? = nil,
        sourceApplication: SourceApplication? = nil
    ) {
        self.id = id
        self.direction = direction
        self.transport = transport
        self.localAddress = localAddress
        self.localPort = localPort
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.remoteHostname = remoteHostname
        self.url = url
        self.sourceApplication = sourceApplication
    }

    /// `remote:port` in the usual notation (IPv6 in brackets).
    public var remoteEndpoint: String {
        remoteAddress.contains(":") ? "[\(remoteAddress)]:\(remotePort)" : "\(remoteAddress):\(remotePort)"
    }
}

/// The Linux "source application" of a flow: the owning socket's user and group, which the
/// kernel reports for every queued packet of a local socket, and for TCP and UDP the process
/// that holds the socket (found by netextd through sock_diag and /proc).
public struct SourceApplication: Sendable, Hashable, Codable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32?
    /// The program's path (`/proc/PID/exe`).
    public var executable: String?
    /// The program's cgroup v2 path (e.g. a systemd unit's), if any.
    public var cgroup: String?

    public init(uid: UInt32, gid: UInt32, pid: Int32? = nil, executable: String? = nil, cgroup: String? = nil) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.executable = executable
        self.cgroup = cgroup
    }

    /// "curl[4242] uid 1000", or "uid 1000" without a process.
    public var summary: String {
        guard let pid else { return "uid \(uid)" }
        let name = executable.flatMap { $0.split(separator: "/").last.map(String.init) } ?? "?"
        return "\(name)[\(pid)] uid \(uid)"
    }
}

/// A data provider's answer for a new flow (Apple's `NEFilterNewFlowVerdict`, the cases
/// netextd implements so far).
public enum FilterVerdict: String, Sendable, Hashable, Codable {
    /// Let the flow pass; the rest of it stays in the kernel.
    case allow
    /// Drop the flow (TCP: the program's connection is reset; a cleartext HTTP request gets
    /// the block page).
    case drop
    /// The data provider cannot decide without fresh rules: the flow waits while the control
    /// provider is asked (`FilterControlProvider.handleNewFlow`), then it is asked again.
    case needRules
}

/// A control provider's answer for a flow the data provider could not judge (Apple's
/// `NEFilterControlVerdict`).
public enum FilterControlVerdict: String, Sendable, Hashable, Codable {
    case allow
    case drop
    /// The rules were updated: the data provider is told (`handleRulesChanged`) and asked again.
    case updateRules
}
