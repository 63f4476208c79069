import Foundation

/// Waits at most `seconds` for `process` to be seen to exit; whether it was. Tests use this,
/// never `Process.waitUntilExit()`: under the full suite's load that once spun for 20 minutes
/// after a SIGKILL (the child's exit apparently missed), and CI has a time limit.
@discardableResult
public func waitForExit(_ process: Process, seconds: Double) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    return !process.isRunning
}
