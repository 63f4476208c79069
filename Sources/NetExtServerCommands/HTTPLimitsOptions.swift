import ArgumentParser
import HTTPServing

/// The connection limits every HTTP role of netext-server takes (`HTTPServerLimits`).
struct HTTPLimitsOptions: ParsableArguments {
    @Option(help: "Connections held at once; more are closed as soon as they are accepted.")
    var maxConnections = HTTPServerLimits().maximumConnections
    @Option(help: ArgumentHelp(
        "Connections one source (an IPv4 address or an IPv6 /64) may hold at once.",
        discussion: "Raise it to --max-connections for a role whose clients all come through one peer (a gateway behind a relay)."))
    var maxConnectionsPerSource = HTTPServerLimits().maximumConnectionsPerSource

    func validate() throws {
        guard (1...1_000_000).contains(maxConnections) else { throw ValidationError("--max-connections must be 1 to 1000000, got \(maxConnections)") }
        guard (1...maxConnections).contains(maxConnectionsPerSource) else {
            throw ValidationError("--max-connections-per-source must be 1 to --max-connections (\(maxConnections)), got \(maxConnectionsPerSource)")
        }
    }

    var limits: HTTPServerLimits {
        var limits = HTTPServerLimits()
        limits.maximumConnections = maxConnections
        limits.maximumConnectionsPerSource = maxConnectionsPerSource
        return limits
    }
}
