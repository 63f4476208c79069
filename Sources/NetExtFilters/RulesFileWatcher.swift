import Foundation

/// A rules file a data provider re-reads when it changes: its modification time is looked at
/// no more often than `recheckInterval` (or at once when forced, after `rulesChanged`), and
/// the text is read only when the time moved.
struct RulesFileWatcher: Sendable {
    enum Change: Sendable {
        case unchanged
        /// The file is (now) absent.
        case absent
        case changed(String)
    }

    let path: String
    private var stamp: Date?
    private var present = false
    private var lastCheck: ContinuousClock.Instant?
    static let recheckInterval: Duration = .milliseconds(500)

    init(path: String) {
        self.path = path
    }

    /// What changed since the last look; throws when the file exists but cannot be read.
    mutating func poll(force: Bool = false, now: ContinuousClock.Instant = .now) throws -> Change {
        if !force, let lastCheck, now - lastCheck < Self.recheckInterval { return .unchanged }
        lastCheck = now
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else {
            defer { present = false; stamp = nil }
            return present ? .absent : .unchanged
        }
        let modified = attributes[.modificationDate] as? Date
        guard force || !present || modified != stamp else { return .unchanged }
        present = true
        stamp = modified
        do { return .changed(try String(contentsOfFile: path, encoding: .utf8)) } catch {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "cannot read \(path): \(error.localizedDescription)"])
        }
    }
}
