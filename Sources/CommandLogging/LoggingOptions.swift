import ArgumentParser
import Logging

/// `--log-level`, shared by netextd and every `netext-server` role: a level that is not one of
/// swift-log's is refused with the list, instead of falling back to `info` unnoticed.
public struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.") public var logLevel = "info"
    @Option(help: "Log line format: auto (journal under systemd, else logfmt), journal (syslog priority prefixes), logfmt, json.")
    public var logFormat = "auto"

    public init() {}

    public var level: Logger.Level { Logger.Level(rawValue: logLevel) ?? .info }

    public func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level: '\(logLevel)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        guard LogFormat(rawValue: logFormat) != nil else {
            throw ValidationError("--log-format: '\(logFormat)' is not one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    public var format: LogFormat { LogFormat(rawValue: logFormat) ?? .auto }

    /// Sends every logger of the process to standard error at this level.
    public func bootstrap() {
        bootstrapStandardErrorLogging(level: level, format: format)
    }
}
