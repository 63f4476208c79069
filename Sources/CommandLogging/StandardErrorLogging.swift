import Logging
import NetExtCore

/// Sends every logger of the process to standard error at `level` (the servers' and netextd's
/// logging; never stdout, which some commands use for results). Every message and metadata
/// value is escaped (`LogText`), so nothing a client sent — a configuration name, an app
/// identifier, a header — can start a forged log line, whichever call site logs it.
public func bootstrapStandardErrorLogging(level: Logger.Level) {
    LoggingSystem.bootstrap { label in
        var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
        handler.logLevel = level
        return handler
    }
}

/// Wraps a log handler and escapes control characters in each event's message and metadata.
public struct EscapingLogHandler<Inner: LogHandler>: LogHandler {
    public var inner: Inner

    public init(_ inner: Inner) {
        self.inner = inner
    }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var event = event
        let message = event.message.description
        if LogText.escaped(message) != message { event.message = Logger.Message(stringLiteral: LogText.escaped(message)) }
        event.metadata = event.metadata?.mapValues(Self.escaped)
        inner.log(event: event)
    }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(LogText.escaped(text))
        case .stringConvertible(let convertible): .string(LogText.escaped(convertible.description))
        case .dictionary(let dictionary): .dictionary(dictionary.mapValues(escaped))
        case .array(let array): .array(array.map(escaped))
        }
    }
}
