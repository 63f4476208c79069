import ArgumentParser
import Logging

/// `--log-level`, shared by netextd and every `netext-server` role: a level that is not one of
/// swift-log's is refused with the list, instead of falling back to `info` unnoticed.
public struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") public var logLevel = "info"

    public init() {}

    public var level: Logger.Level { Logger.Level(rawValue: logLevel) ?? .info }

    public func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level: '\(logLevel)' is not one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// Sends every logger of the process to standard error at this level.
    public func bootstrap() {
        bootstrapStandardErrorLogging(level: level)
    }
}
