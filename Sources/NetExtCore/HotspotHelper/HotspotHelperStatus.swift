/// netextd's hotspot helpers and the session of the network handed to them
/// (`netext hotspot status`).
public struct HotspotHelperStatus: Sendable, Hashable, Codable {
    /// One installed helper and its process.
    public struct Helper: Sendable, Hashable, Codable {
        public var bundleIdentifier: String
        /// The user its process runs as.
        public var user: String
        /// Whether its process has started and answers commands.
        public var ready: Bool
        /// How many times its process ended and was started again.
        public var restarts: Int
        /// Why it last ended or failed, if it did.
        public var lastError: String?

        public init(bundleIdentifier: String, user: String, ready: Bool, restarts: Int, lastError: String?) {
            self.bundleIdentifier = bundleIdentifier
            self.user = user
            self.ready = ready
            self.restarts = restarts
            self.lastError = lastError
        }
    }

    /// The installed helpers, in the order they are asked.
    public var helpers: [Helper]
    /// The interface of the network handed to the helpers, if any.
    public var interface: String?
    /// The network's session (nil: no helper is installed).
    public var state: HotspotHelperSession.State?
    /// The helper chosen for the network.
    public var chosen: String?

    public init(helpers: [Helper], interface: String?, state: HotspotHelperSession.State?, chosen: String?) {
        self.helpers = helpers
        self.interface = interface
        self.state = state
        self.chosen = chosen
    }
}
