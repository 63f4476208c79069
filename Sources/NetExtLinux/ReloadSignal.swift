import Dispatch
import Foundation

/// SIGHUP, the daemon convention for "read your files again" (systemd's `ExecReload`). Its
/// default action ends the process, so a server that does not handle it dies from a reload.
public enum ReloadSignal {
    /// Stops SIGHUP from ending the process and runs `handler` (on a queue of its own, one at a
    /// time) each time it arrives. Keep the returned source for as long as reloads should work.
    public static func handle(label: String, _ handler: @escaping @Sendable () -> Void) -> any DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: label))
        source.setEventHandler(handler: handler)
        source.resume()
        return source
    }
}
