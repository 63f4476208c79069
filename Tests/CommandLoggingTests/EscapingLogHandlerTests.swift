import ArgumentParser
import Logging
import Synchronization
import Testing
@testable import CommandLogging

@Suite("Log lines clients cannot forge")
struct EscapingLogHandlerTests {
    final class Recorder: Sendable {
        let events = Mutex<[(message: String, metadata: Logger.Metadata)]>([])
    }

    struct RecordingHandler: LogHandler {
        let recorder: Recorder
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            recorder.events.withLock { $0.append((event.message.description, event.metadata ?? [:])) }
        }
    }

    @Test func messagesAndEveryKindOfMetadataValueAreEscaped() throws {
        let recorder = Recorder()
        let logger = Logger(label: "test") { _ in EscapingLogHandler(RecordingHandler(recorder: recorder)) }
        logger.info("name \("a\nb")", metadata: [
            "string": "x\ny", "convertible": "\(Character("\u{2028}"))",
            "list": .array(["ok", "c\rd"]), "nested": .dictionary(["k": "e\u{1b}[31m"]),
        ])
        let event = try #require(recorder.events.withLock { $0.first })
        #expect(event.message == "name a\\nb")
        #expect(event.metadata["string"] == .string("x\\ny"))
        #expect(event.metadata["convertible"] == .string("\\u{2028}"))
        #expect(event.metadata["list"] == .array([.string("ok"), .string("c\\rd")]))
        #expect(event.metadata["nested"] == .dictionary(["k": .string("e\\u{1b}[31m")]))
    }

    @Test func plainTextPassesUnchanged() throws {
        let recorder = Recorder()
        let logger = Logger(label: "test") { _ in EscapingLogHandler(RecordingHandler(recorder: recorder)) }
        logger.notice("status changed", metadata: ["to": "connected"])
        let event = try #require(recorder.events.withLock { $0.first })
        #expect(event.message == "status changed" && event.metadata["to"] == .string("connected"))
    }
}

@Suite("--log-level")
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
}
