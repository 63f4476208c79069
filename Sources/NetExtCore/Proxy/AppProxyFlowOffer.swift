/// A host and port, as Apple's `NWHostEndpoint`: an address in text, or a host name.
public struct NetworkEndpoint: Sendable, Hashable, Codable, CustomStringConvertible {
    public var hostname: String
    public var port: UInt16

    public init(hostname: String, port: UInt16) {
        self.hostname = hostname
        self.port = port
    }

    /// `192.0.2.1:443`, `[2001:db8::1]:443`, `www.example.com:443`.
    public var description: String { hostname.contains(":") ? "[\(hostname)]:\(port)" : "\(hostname):\(port)" }
}

/// What netextd knows of a flow it hands an app proxy provider, as Apple's `NEAppProxyFlow`
/// properties and `NEFlowMetaData`: where the app was going, where it is, and which app it is
/// (an inbound flow: which machine opened it, to which service here).
public struct AppProxyFlowOffer: Sendable, Hashable {
    public enum Transport: UInt8, Sendable, Hashable {
        case tcp = 0
        case udp = 1
    }

    /// netextd's number for the flow (unique while it runs).
    public var id: UInt64
    public var transport: Transport
    /// Where the app sent the flow: the address (and port) it connected to.
    public var remoteEndpoint: NetworkEndpoint
    /// The app's own end of the flow.
    public var localEndpoint: NetworkEndpoint
    /// The name the app's resolver asked for the remote address, when netextd saw the answer
    /// (Apple's `remoteHostname`).
    public var remoteHostname: String?
    /// The app identifier of the binding the flow came from (`sourceAppSigningIdentifier`).
    public var sourceAppIdentifier: String
    /// The process that owns the app's socket, when it was found.
    public var processIdentifier: Int32?
    /// That process's executable (`/proc/PID/exe`).
    public var executablePath: String?
    /// A UDP flow: the app's first datagram (netextd received it before the flow had a socket
    /// of its own). Empty for TCP.
    public var initialDatagram: [UInt8]
    /// `.outbound` (a program here opened it; `remoteEndpoint` is where it goes) or `.inbound`
    /// (another machine opened it to a service here: `remoteEndpoint` is that machine,
    /// `localEndpoint` the service's address and port).
    public var direction: TrafficDirection

    public init(
        id: UInt64, transport: Transport, remoteEndpoint: NetworkEndpoint, localEndpoint: NetworkEndpoint, remoteHostname: String? = nil,
        sourceAppIdentifier: String, processIdentifier: Int32? = nil, executablePath: String? = nil, initialDatagram: [UInt8] = [],
        direction: TrafficDirection = .outbound
    ) {
        self.direction = direction
        self.initialDatagram = initialDatagram
        self.id = id
        self.transport = transport
        self.remoteEndpoint = remoteEndpoint
        self.localEndpoint = localEndpoint
        self.remoteHostname = remoteHostname
        self.sourceAppIdentifier = sourceAppIdentifier
        self.processIdentifier = processIdentifier
        self.executablePath = executablePath
    }
}
