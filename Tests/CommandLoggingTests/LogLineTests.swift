import ArgumentParser
import Foundation
import Logging
import Testing
@testable import CommandLogging

@Suite("Log lines: journal priorities, logfmt, JSON; nothing a client sent can forge a line")
struct LogLineTests {
    let date = Date(timeIntervalSince1970: 1_795_000_000.25)

    @Test("journal: the syslog priority systemd reads, no timestamp, values quoted where needed")
    func journal() {
        let line = LogLine.render(format: .journal, date: date, level: .error, label: "netextd", message: "tunnel network settings refused",
                                  metadata: ["error": "File exists", "interface": "netext0"])
        #expect(line == #"<3>netextd: tunnel network settings refused error="File exists" interface=netext0"#)
        let levels: [Logger.Level] = [.trace, .debug, .info, .notice, .warning, .error, .critical]
        #expect(levels.map(LogLine.syslogPriority) == [7, 7, 6, 5, 4, 3, 2])
    }

    @Test("logfmt: time, level, logger, message, then metadata by key; nested values flattened")
    func logfmt() {
        let line = LogLine.render(format: .logfmt, date: date, level: .info, label: "netext-server.tunnel", message: "status changed",
                                  metadata: ["to": "connected", "peer": .dictionary(["name": "laptop", "endpoint": "198.51.100.2:5"]), "routes": .array(["10.0.0.0/8", "fd00::/8"]), "empty": ""])
        #expect(line == #"time=2026-11-18T11:06:40.250Z level=info logger=netext-server.tunnel msg="status changed" empty="" peer.endpoint=198.51.100.2:5 peer.name=laptop routes=10.0.0.0/8,fd00::/8 to=connected"#)
    }

    @Test("a value with a newline, a quote, an equals sign or an escape sequence stays on its line, in every format")
    func forgedLines() throws {
        let hostile = "Office\nlevel=critical msg=\"forged\"\u{1b}[31m\u{2028}"
        for format in [LogFormat.journal, .logfmt, .json] {
            let line = LogLine.render(format: format, date: date, level: .info, label: "netextd", message: "name \(hostile)", metadata: ["name": .string(hostile)])
            #expect(!line.contains("\n") && !line.contains("\u{1b}") && !line.contains("\u{2028}"), "\(format): \(line)")
            if format == .logfmt {
                #expect(line.hasSuffix(#"name="Office\nlevel=critical msg=\"forged\"\u{1b}[31m\u{2028}""#), "\(line)")
            }
            if format == .json {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
                #expect(object["name"] == hostile && object["level"] == "info" && object["logger"] == "netextd")
            }
        }
    }

    @Test("json: one object a line; metadata cannot overwrite the event's own fields")
    func json() throws {
        let line = LogLine.render(format: .json, date: date, level: .warning, label: "pir", message: "overloaded", metadata: ["level": "debug", "queue": "512"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object == ["time": "2026-11-18T11:06:40.250Z", "level": "warning", "logger": "pir", "msg": "overloaded", "queue": "512"])
    }

    @Test("auto: journal only when standard error is the socket $JOURNAL_STREAM names")
    func autoFormat() {
        #expect(LogFormat.auto.resolved(environment: [:]) == .logfmt)
        #expect(LogFormat.auto.resolved(environment: ["JOURNAL_STREAM": "1:1"]) == .logfmt, "a stale JOURNAL_STREAM (another descriptor) is not believed")
        #expect(LogFormat.auto.resolved(environment: ["JOURNAL_STREAM": "garbage"]) == .logfmt)
        var info = stat()
        fstat(2, &info)
        #expect(LogFormat.auto.resolved(environment: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]) == .journal)
        #expect(LogFormat.json.resolved(environment: [:]) == .json)
    }
}

@Suite("--log-level and --log-format")
struct LoggingOptionsTests {
    @Test func aKnownLevelIsTakenAndAnUnknownOneRefusedWithTheList() throws {
        #expect(try LoggingOptions.parse(["--log-level", "debug"]).level == .debug)
        #expect(try LoggingOptions.parse([]).level == .info)
        do {
            _ = try LoggingOptions.parse(["--log-level", "verbose"])
            Issue.record("--log-level verbose was accepted")
        } catch {
            #expect(LoggingOptions.message(for: error).contains("'verbose' is not one of trace, debug, info"))
        }
    }

    @Test func aFormatIsTakenAndAnUnknownOneRefusedWithTheList() throws {
        #expect(try LoggingOptions.parse(["--log-format", "json"]).format == .json)
        #expect(try LoggingOptions.parse([]).format == .auto)
        do {
            _ = try LoggingOptions.parse(["--log-format", "xml"])
            Issue.record("--log-format xml was accepted")
        } catch {
            #expect(LoggingOptions.message(for: error).contains("'xml' is not one of auto, journal, logfmt, json"))
        }
    }
}
