import Foundation

// The transfer service's socket protocol (docs/background-transfers.md): frames of a 4-byte
// big-endian length and UTF-8 JSON, as netextd's control socket. The app sends commands, each
// with a serial its reply carries; the service sends replies and events.

/// A command from an app to the transfer service.
package enum TransferCommand: Sendable, Codable, Equatable {
    /// Speaks for the background session `session` from now on: the reply lists its tasks, and
    /// the events it missed follow.
    case attach(session: String)
    /// Adds a task (suspended, as Foundation's tasks start).
    case create(TransferSpec)
    case resume(task: Int)
    case cancel(task: Int)
    /// The app has handled the task's completion: its file and record may go.
    case acknowledge(task: Int)
    case list
}

/// What a task is to do.
package struct TransferSpec: Sendable, Codable, Equatable {
    package enum Kind: String, Sendable, Codable { case download, upload }
    package var kind: Kind
    package var request: URLRequest
    /// An upload's body: a file the service reads when the task starts.
    package var uploadFile: String?
    package var settings: BackgroundTransferSettings

    package init(kind: Kind, request: URLRequest, uploadFile: String? = nil, settings: BackgroundTransferSettings) {
        self.kind = kind
        self.request = request
        self.uploadFile = uploadFile
        self.settings = settings
    }
}

/// A command with the serial of its reply.
package struct TransferCommandEnvelope: Sendable, Codable, Equatable {
    package var serial: Int
    package var command: TransferCommand
    package init(serial: Int, command: TransferCommand) {
        self.serial = serial
        self.command = command
    }
}

/// A task as the service reports it.
package struct TransferTaskStatus: Sendable, Codable, Equatable {
    package enum State: String, Sendable, Codable {
        /// Created, not resumed yet.
        case suspended
        /// Loading, or waiting to try again (``retries`` says how often it has).
        case running
        /// Finished or failed; its events wait for the app.
        case completed
    }
    package var task: Int
    package var kind: TransferSpec.Kind
    package var url: String
    package var state: State
    package var bytesReceived: Int64
    package var bytesExpected: Int64?
    package var retries: Int
    /// Why the last attempt failed (while retrying) or why the task failed (completed).
    package var lastError: String?

    package init(task: Int, kind: TransferSpec.Kind, url: String, state: State, bytesReceived: Int64, bytesExpected: Int64?, retries: Int, lastError: String?) {
        self.task = task
        self.kind = kind
        self.url = url
        self.state = state
        self.bytesReceived = bytesReceived
        self.bytesExpected = bytesExpected
        self.retries = retries
        self.lastError = lastError
    }
}

/// The head of a finished task's answer.
package struct TransferResponse: Sendable, Codable, Equatable {
    package var url: String
    package var statusCode: Int
    /// Name and value pairs in the order received.
    package var headers: [[String]]
    package var networkProtocolName: String
    package var tlsVersion: String?
    package var remoteAddress: String?
    package var redirectCount: Int

    package init(_ response: HTTPURLResponse) {
        url = response.url.absoluteString
        statusCode = response.statusCode
        headers = response.headerFields.map { [$0.name, $0.value] }
        networkProtocolName = response.metrics.networkProtocolName
        tlsVersion = response.metrics.negotiatedTLSProtocolVersion
        remoteAddress = response.metrics.remoteAddress
        redirectCount = response.metrics.redirectCount
    }

    /// The answer's head as the app sees it, with the ATS rules `policy` gives its host (the
    /// ones the service held the load to).
    package func response(policy: ATSPolicy) -> HTTPURLResponse? {
        guard let url = URL(string: url) else { return nil }
        let metrics = URLSessionTaskTransactionMetrics(
            networkProtocolName: networkProtocolName, negotiatedTLSProtocolVersion: tlsVersion, isReusedConnection: false,
            remoteAddress: remoteAddress, serverCertificate: nil, appTransportSecurity: policy.requirements(for: url.host?.lowercased() ?? ""),
            redirectCount: redirectCount)
        return HTTPURLResponse(url: url, statusCode: statusCode, headerFields: headers.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }, metrics: metrics)
    }
}

/// The service's answer to one command.
package enum TransferReply: Sendable, Codable, Equatable {
    case attached([TransferTaskStatus])
    case created(TransferTaskStatus)
    case tasks([TransferTaskStatus])
    case done
    /// The command was refused; a sentence says why.
    case refused(String)
}

/// What the service tells the attached app of its session's tasks.
package enum TransferEvent: Sendable, Codable, Equatable {
    case progress(task: Int, written: Int64, expected: Int64?)
    /// A download's file is at `location` (the service's, until acknowledged).
    case finishedDownloading(task: Int, location: String, response: TransferResponse)
    /// An upload's answer came; its body (up to 1 MiB) is `body`.
    case received(task: Int, response: TransferResponse, body: Data)
    /// The task is over: `error` nil for success, else a sentence; `cancelled` when the app
    /// cancelled it.
    case completed(task: Int, error: String?, cancelled: Bool)
    /// Every event that waited for the app at attach has been sent.
    case eventsDelivered
}

/// One frame from the service.
package enum TransferServiceMessage: Sendable, Codable, Equatable {
    case reply(serial: Int, TransferReply)
    case event(TransferEvent)
}

/// Where the user's transfer service listens and keeps its state.
package enum BackgroundTransferPaths {
    /// `$NETEXT_TRANSFERS_SOCKET`, else `$XDG_RUNTIME_DIR/netext/transfers.sock`, else
    /// `/tmp/netext-transfers-UID/transfers.sock`.
    package static var socket: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["NETEXT_TRANSFERS_SOCKET"], !path.isEmpty { return path }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return "\(runtime)/netext/transfers.sock" }
        return "/tmp/netext-transfers-\(getuid())/transfers.sock"
    }

    /// `$NETEXT_TRANSFERS_STATE`, else `$XDG_STATE_HOME/netext/transfers`, else
    /// `~/.local/state/netext/transfers`.
    package static var state: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["NETEXT_TRANSFERS_STATE"], !path.isEmpty { return path }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return "\(state)/netext/transfers" }
        return "\(FileManager.default.homeDirectoryForCurrentUser.path)/.local/state/netext/transfers"
    }
}
