import Logging

/// Sends every logger of the process to standard error at `level` (the servers' and netextd's
/// logging; never stdout, which some commands use for results).
public func bootstrapStandardErrorLogging(level: Logger.Level) {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = level
        return handler
    }
}
