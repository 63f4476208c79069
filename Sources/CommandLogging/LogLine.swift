import Foundation
import Logging
import NetExtCore

/// How log lines are written to standard error.
public enum LogFormat: String, Sendable, CaseIterable {
    /// `journal` when standard error is connected to systemd's journal (`$JOURNAL_STREAM` names
    /// it), else `logfmt`.
    case auto
    /// `<3>netextd: message key=value`: the syslog priority in the prefix systemd reads
    /// (sd-daemon(3)), no timestamp (the journal keeps its own), so `journalctl -p err` finds
    /// errors.
    case journal
    /// `time=… level=info logger=netextd msg="status changed" key=value` (logfmt): one event a
    /// line, values quoted where needed, for files and terminals.
    case logfmt
    /// One JSON object a line: `{"time", "level", "logger", "msg", …metadata}`.
    case json

    /// The format `auto` stands for in this process.
    public func resolved(environment: [String: String] = ProcessInfo.processInfo.environment) -> LogFormat {
        guard self == .auto else { return self }
        return LogLine.standardErrorIsJournal(environment: environment) ? .journal : .logfmt
    }
}

/// One log event as a line, in each format. Pure: the handler adds only the clock and the write.
public enum LogLine {
    /// The event as a line (no newline). Message and values are escaped so that nothing a client
    /// sent can start a forged line (`LogText`); metadata keys in order; nested values flattened
    /// (`peer.name=…`).
    public static func render(
        format: LogFormat, date: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata
    ) -> String {
        let fields = flatten(metadata)
        switch format {
        case .journal, .auto:
            let pairs = fields.map { "\($0.key)=\(value($0.value))" }
            return "<\(syslogPriority(level))>\(label): \(LogText.escaped(message))" + (pairs.isEmpty ? "" : " " + pairs.joined(separator: " "))
        case .logfmt:
            var pairs = ["time=\(timestamp(date))", "level=\(level.rawValue)", "logger=\(value(label))", "msg=\(value(message))"]
            pairs += fields.map { "\($0.key)=\(value($0.value))" }
            return pairs.joined(separator: " ")
        case .json:
            var object: [(String, String)] = [("time", timestamp(date)), ("level", level.rawValue), ("logger", label), ("msg", message)]
            object += fields.filter { !["time", "level", "logger", "msg"].contains($0.key) }
            return "{" + object.map { "\(jsonString($0.0)):\(jsonString($0.1))" }.joined(separator: ",") + "}"
        }
    }

    /// syslog(3) priorities as systemd reads them from a `<N>` prefix.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// A logfmt value: bare when it is a plain token, else quoted with `"` and `\` escaped.
    public static func value(_ text: String) -> String {
        let escaped = LogText.escaped(text)
        let plain = !escaped.isEmpty && !escaped.unicodeScalars.contains { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "\\" }
        return plain ? escaped : "\"" + escaped.replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Metadata as sorted key/value pairs, dictionaries flattened with dotted keys and lists
    /// joined with commas.
    static func flatten(_ metadata: Logger.Metadata, prefix: String = "") -> [(key: String, value: String)] {
        var result: [(key: String, value: String)] = []
        for (key, item) in metadata.sorted(by: { $0.key < $1.key }) {
            let name = prefix.isEmpty ? key : prefix + "." + key
            switch item {
            case .string(let text): result.append((name, text))
            case .stringConvertible(let convertible): result.append((name, convertible.description))
            case .dictionary(let dictionary): result += flatten(dictionary, prefix: name)
            case .array(let list): result.append((name, list.map(\.description).joined(separator: ",")))
            }
        }
        return result
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where LogText.needsEscape(scalar):
                result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// Whether standard error is the journal's stream: `$JOURNAL_STREAM` is `DEVICE:INODE` of the
    /// socket systemd connected (systemd.exec(5)), and descriptor 2 must still be that socket.
    static func standardErrorIsJournal(environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}

/// Writes each event as one line on standard error, in a `LogFormat`. One write per line, so
/// lines from several threads never interleave.
public struct LineLogHandler: LogHandler {
    public let label: String
    public let format: LogFormat
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    /// `format` should be resolved already (`LogFormat.resolved()`); `auto` is resolved here.
    public init(label: String, format: LogFormat, level: Logger.Level) {
        self.label = label
        self.format = format == .auto ? format.resolved() : format
        logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        let line = LogLine.render(format: format, date: Date(), level: event.level, label: label, message: event.message.description, metadata: merged) + "\n"
        line.utf8CString.withUnsafeBufferPointer { buffer in
            var offset = 0
            let count = buffer.count - 1
            while offset < count {
                let written = write(2, buffer.baseAddress! + offset, count - offset)
                if written > 0 { offset += written } else if written < 0 && errno == EINTR { continue } else { break }
            }
        }
    }
}
