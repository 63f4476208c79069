import Foundation
import NetExtHTTP
import NetExtLinux
#if canImport(Glibc)
import Glibc
#endif

/// `netext-transferd`: the user's transfer service. Apps start it on demand (a background
/// session that finds no service spawns it); it runs as the user, keeps its tasks under the
/// state directory, and exits once no app is attached and no task runs for `idleExit`.
public enum TransferDaemon {
    /// What the command line may set.
    public struct Options: Sendable, Equatable {
        public var socket = BackgroundTransferPaths.socket
        public var state = BackgroundTransferPaths.state
        /// Seconds without apps or running tasks before the service exits; 0 to never exit
        /// (`$NETEXT_TRANSFERD_IDLE_EXIT` when set, else 60).
        public var idleExit: Double = ProcessInfo.processInfo.environment["NETEXT_TRANSFERD_IDLE_EXIT"].flatMap(Double.init).map { max(0, $0) } ?? 60
        /// Log to standard error as well as to `<state>/transferd.log`.
        public var logToStandardError = false
        /// Started by an app (``TransferServiceLauncher``): standard error is the app's pipe,
        /// let go of once listening.
        public var startedOnDemand = false

        public init() {}
    }

    public static let usage = """
        usage: netext-transferd [--socket PATH] [--state DIR] [--idle-exit SECONDS] [--log-stderr]
        The user's background transfer service for NetExtHTTP background sessions (started by apps on demand).
        """

    /// Reads the arguments; a sentence naming the argument at fault otherwise.
    public static func options(_ arguments: [String]) throws(TransferArgumentError) -> Options {
        var options = Options()
        var index = 0
        func value(_ name: String) throws(TransferArgumentError) -> String {
            index += 1
            guard index < arguments.count else { throw TransferArgumentError("\(name) needs a value\n\(usage)") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--socket": options.socket = try value(argument)
            case "--state": options.state = try value(argument)
            case "--idle-exit":
                let text = try value(argument)
                guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
                    throw TransferArgumentError("--idle-exit takes a number of seconds ≥ 0, not '\(text)'")
                }
                options.idleExit = seconds
            case "--log-stderr": options.logToStandardError = true
            case "--started-on-demand": options.startedOnDemand = true
            default: throw TransferArgumentError("unknown argument '\(argument)'\n\(usage)")
            }
            index += 1
        }
        return options
    }

    /// Runs until idle for `options.idleExit` (or forever with 0). Returns the exit status.
    public static func run(_ options: Options) async -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        // Everything it writes (store, downloads, log) is the user's alone.
        umask(0o077)
        do { try TransferDirectories.makePrivate(options.state) } catch {
            FileHandle.standardError.write(Data("netext-transferd: \(error)\n".utf8))
            return 1
        }
        // One service per state directory: a second one (two apps starting it at once) leaves.
        let lockPath = options.state + "/transferd.lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            FileHandle.standardError.write(Data("netext-transferd: another service runs for \(options.state)\n".utf8))
            return 0
        }
        let log = TransferLog(path: options.state + "/transferd.log", toStandardError: options.logToStandardError)
        let service: TransferService
        let server: TransferServer
        do {
            let store = try TransferStore(path: options.state + "/transfers.sqlite")
            service = TransferService(store: store, directory: URL(fileURLWithPath: options.state + "/tasks"), log: log.write)
            try await service.start()
            server = try await TransferServer.start(path: options.socket, service: service, log: log.write)
        } catch {
            log.write("\(error)")
            FileHandle.standardError.write(Data("netext-transferd: \(error)\n".utf8))
            return 1
        }
        log.write("listening on \(options.socket) (uid \(getuid()))")
        if options.startedOnDemand {
            // The app that started us reads our standard error only until we answer.
            let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
            if null >= 0 { dup2(null, 2); close(null) }
        }
        let watcher = RouteChangeWatcher()
        watcher.start { Task { await service.networkChanged() } }
        var idleSince: ContinuousClock.Instant?
        while true {
            try? await Task.sleep(for: .milliseconds(250))
            if await service.isIdle {
                let since = idleSince ?? .now
                idleSince = since
                if options.idleExit > 0, ContinuousClock.now - since >= .milliseconds(Int(options.idleExit * 1000)) { break }
            } else {
                idleSince = nil
            }
        }
        log.write("idle for \(options.idleExit) s: exiting")
        watcher.stop()
        await server.close()
        return 0
    }
}

/// A command-line mistake, as a sentence.
public struct TransferArgumentError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The service's log: lines with a time, appended to a file of mode 0600. Task lines name the
/// host, never the URL's path or query (they may carry tokens).
final class TransferLog: Sendable {
    private let handle: FileHandle?
    private let toStandardError: Bool
    private let lock = NSLock()

    init(path: String, toStandardError: Bool) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        handle = descriptor >= 0 ? FileHandle(fileDescriptor: descriptor, closeOnDealloc: true) : nil
        self.toStandardError = toStandardError
    }

    var write: @Sendable (String) -> Void {
        { [self] line in
            let stamped = Data("\(ISO8601DateFormatter().string(from: Date())) \(line)\n".utf8)
            lock.withLock {
                handle?.write(stamped)
                if toStandardError { FileHandle.standardError.write(stamped) }
            }
        }
    }
}
