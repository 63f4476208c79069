import NetExtIPC

/// What one client of the control socket may hold of netextd (issue 26): a local user without
/// privileges must not be able to grow netextd's memory, use up its descriptors, or make root
/// wait. Root is never refused a connection.
public struct ControlLimits: Sendable {
    /// A connection of a user other than root that has not said hello within this many
    /// seconds is closed.
    public var helloDeadline: Duration = .seconds(5)
    /// The largest frame before hello (a hello is a few hundred bytes).
    public var frameBeforeHello = 16 * 1024
    /// The largest frame from a client that may only read (its requests are small).
    public var frameForReaders = 256 * 1024
    /// The largest frame from a client that may change configurations (profiles can be big).
    public var frameForAdministrators = FrameDecoder.maximumFrameLength
    /// Requests of one connection being answered at once; beyond it netextd stops reading the
    /// connection until one is answered (and an answer the client does not read counts as not
    /// yet answered).
    public var requestsInFlightPerConnection = 16
    /// Connections one user other than root may hold open.
    public var connectionsPerUser = 16
    /// Connections all users other than root may hold open together.
    public var connectionsOfOtherUsers = 256
    /// The listen backlog (a burst of clients connecting at once waits instead of failing).
    public var backlog: Int32 = 4096

    public init() {}
}
