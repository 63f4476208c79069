import Logging
import NetExtCore

/// Sends every logger of the process to standard error at `level`, one line an event in
/// `format` (the servers' and netextd's logging; never stdout, which some commands use for
/// results). Every message and metadata value is escaped (`LogText`), so nothing a client sent —
/// a configuration name, an app identifier, a header — can start a forged log line, whichever
/// call site logs it.
public func bootstrapStandardErrorLogging(level: Logger.Level, format: LogFormat = .auto) {
    // Resolved once (environment and fstat), not for every logger made.
    let resolved = format.resolved()
    LoggingSystem.bootstrap { label in LineLogHandler(label: label, format: resolved, level: level) }
}
