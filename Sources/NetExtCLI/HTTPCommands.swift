import ArgumentParser
import Foundation
import NetExtHTTP

/// `netext http …`: loads with NetExtHTTP, App Transport Security and all.
struct HTTPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http",
        abstract: "Load URLs as an app does through NetExtHTTP, App Transport Security included.",
        discussion: """
            Loads are held to App Transport Security: https only, TLS 1.2 or later with forward secrecy, RSA 2048+ or \
            ECC 256+ bit keys signed with SHA-2, and the pins of NSPinnedDomains, unless the app's policy (--ats FILE: \
            its Info.plist, a plist or JSON NSAppTransportSecurity dictionary) excepts the domain. \
            Each load is also asked of netextd's URL filter when one runs. \
            Exit status: 0 answered, 1 denied by the URL filter, 12 refused by App Transport Security, 5 any other failure, 75 timed out.
            """,
        subcommands: [HTTPGetCommand.self, HTTPHeadCommand.self, HTTPPostCommand.self, HTTPDiagnoseCommand.self, HTTPStreamCommand.self, HTTPBackgroundCommand.self])
}

/// Options every `netext http` command takes.
struct HTTPOptions: ParsableArguments {
    @Option(name: .customLong("ats"), help: "The app's App Transport Security policy: an Info.plist, or a plist or JSON NSAppTransportSecurity dictionary.")
    var atsFile: String?
    @Option(name: .customLong("cacert"), help: "Trust only the CA certificates of this PEM file (default: the machine's CA bundle).")
    var caFile: String?
    @Option(name: .customLong("resolve"), help: "HOST:ADDRESS — connect to ADDRESS for HOST instead of looking it up (repeatable).")
    var resolve: [String] = []
    @Option(name: .customLong("max-time"), help: "Seconds a load may go without a byte of its answer (default 60).")
    var maxTime: Double = 60
    @Flag(name: .customLong("http1.1"), help: "Offer only HTTP/1.1 (no HTTP/2 by ALPN).")
    var http1Only = false
    @Option(name: .customLong("proxy"), help: "Go through this proxy: http://HOST:PORT (CONNECT for https) or socks5://HOST:PORT.")
    var proxy: String?
    @Option(name: .customLong("proxy-user"), help: "The proxy's user name; the password comes from $NETEXT_PROXY_PASSWORD or --proxy-password-file (never the command line).")
    var proxyUser: String?
    @Option(name: .customLong("proxy-password-file"), help: "A file whose first line is the proxy's password.")
    var proxyPasswordFile: String?
    @Option(name: .customLong("user"), help: "Answer the server's Basic or Digest challenge (a 401) as this user; the password comes from $NETEXT_HTTP_PASSWORD or --password-file (never the command line).")
    var user: String?
    @Option(name: .customLong("password-file"), help: "A file whose first line is --user's password.")
    var passwordFile: String?
    @Option(name: .customLong("pinned-key"), help: "Trust the server only with this key: the base64 SHA-256 of its certificate's SubjectPublicKeyInfo (NSPinnedDomains' SPKI-SHA256-BASE64). A server default evaluation trusts is refused with another key; one it refuses (self-signed, expired) is accepted with this one where the ATS policy lets the domain loosen trust (NSExceptionAllowsInsecureHTTPLoads).")
    var pinnedKey: String?
    @Option(name: .customLong("interface"), help: "Leave by this interface whatever the routing table says (SO_BINDTODEVICE; curl's --interface).")
    var interface: String?
    @Option(name: .customLong("cookie-group"), help: "Keep cookies in this app group's container, shared with the group's other processes (default: none kept after the command).")
    var cookieGroup: String?

    /// A password: the first line of `file` (named by `option`), else the environment variable.
    private static func password(file: String?, option: String, environment: String, for owner: String) throws -> String {
        if let file {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw HTTPCommandFailure.usage("\(option) \(file) cannot be read")
            }
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.isEmpty else { throw HTTPCommandFailure.usage("\(option) \(file) has an empty first line") }
            return line
        }
        guard let password = ProcessInfo.processInfo.environment[environment], !password.isEmpty else {
            throw HTTPCommandFailure.usage("\(owner) needs the password in $\(environment) or \(option)")
        }
        return password
    }

    /// The session for the options: with --user or --pinned-key, a delegate answers the server's
    /// challenges.
    func makeSession(verbose: Bool) throws -> URLSession {
        let configuration = try sessionConfiguration(verbose: verbose)
        if passwordFile != nil && user == nil { throw HTTPCommandFailure.usage("--password-file needs --user") }
        if let pinnedKey, Data(base64Encoded: pinnedKey)?.count != 32 {
            throw HTTPCommandFailure.usage("--pinned-key '\(pinnedKey)' is not the base64 of a SHA-256 hash (44 characters ending in '=')")
        }
        guard user != nil || pinnedKey != nil else { return URLSession(configuration: configuration) }
        let credential = try user.map { user in
            URLCredential(user: user, password: try Self.password(file: passwordFile, option: "--password-file", environment: "NETEXT_HTTP_PASSWORD", for: "--user"))
        }
        return URLSession(configuration: configuration, delegate: CommandSessionDelegate(credential: credential, pinnedKey: pinnedKey, log: configuration.diagnosticLog))
    }

    func sessionConfiguration(verbose: Bool, base: URLSessionConfiguration = .default) throws -> URLSessionConfiguration {
        var configuration = base
        if let atsFile {
            do { configuration.appTransportSecurity = try ATSPolicy(contentsOf: atsFile) } catch { throw HTTPCommandFailure.usage(error.description) }
        }
        if let caFile {
            do { configuration.trust = try HTTPTrust.pemFile(caFile) } catch { throw HTTPCommandFailure.usage(error.description) }
        }
        for entry in resolve {
            guard let colon = entry.firstIndex(of: ":"), colon != entry.startIndex else {
                throw HTTPCommandFailure.usage("--resolve '\(entry)' is not HOST:ADDRESS")
            }
            configuration.hostAddresses[String(entry[..<colon]).lowercased()] = String(entry[entry.index(after: colon)...])
        }
        guard maxTime > 0 else { throw HTTPCommandFailure.usage("--max-time must be more than 0 seconds") }
        configuration.timeoutIntervalForRequest = maxTime
        configuration.allowsHTTP2 = !http1Only
        configuration.requiredInterface = interface
        if let proxy {
            do { configuration.proxy = try ConnectionProxy(url: proxy) } catch { throw HTTPCommandFailure.usage(error.description) }
        }
        if let proxyUser {
            guard configuration.proxy != nil else { throw HTTPCommandFailure.usage("--proxy-user needs --proxy") }
            configuration.proxyCredential = URLCredential(
                user: proxyUser, password: try Self.password(file: proxyPasswordFile, option: "--proxy-password-file", environment: "NETEXT_PROXY_PASSWORD", for: "--proxy-user"))
        }
        if let cookieGroup {
            do { configuration.httpCookieStorage = try .sharedCookieStorage(forGroupContainerIdentifier: cookieGroup) } catch {
                throw HTTPCommandFailure.usage(error.description)
            }
        }
        if verbose { configuration.diagnosticLog = { line in StandardStreams.error(Data("* \(line)\n".utf8)) } }
        return configuration
    }
}

struct HTTPGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "get", abstract: "GET a URL and print its body.")
    @OptionGroup var http: HTTPOptions
    @Flag(name: .shortAndLong, help: "Show the protocol, TLS version, certificate, ATS decision and headers on standard error.") var verbose = false
    @Flag(name: .shortAndLong, help: "Print the status line and headers before the body.") var include = false
    @Option(name: .customShort("H"), help: "A header field, 'Name: value' (repeatable).") var header: [String] = []
    @Option(help: "Load the URL this many times at once on one session and print a summary instead of the body (1–10000).") var parallel: Int?
    @Option(name: .shortAndLong, help: "Write the body to FILE as it arrives, with its resume data in FILE.netext-resume until it is complete: if the download breaks off (or the command is killed), the same command goes on from where the file ends.")
    var output: String?
    @Argument(help: "The URL.") var url: String

    func run() async throws {
        let run = HTTPLoadRun(http: http, verbose: verbose, include: include, headers: header, method: "GET", body: nil)
        if let output {
            try await run.download(url, to: output)
        } else if let parallel {
            guard (1...10_000).contains(parallel) else { throw HTTPCommandFailure.usage("--parallel must be from 1 to 10000").exit() }
            try await run.loadInParallel(url, count: parallel)
        } else {
            try await run.load(url)
        }
    }
}

struct HTTPHeadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "head", abstract: "HEAD a URL and print the status line and headers.")
    @OptionGroup var http: HTTPOptions
    @Flag(name: .shortAndLong, help: "Show the protocol, TLS version, certificate and ATS decision on standard error.") var verbose = false
    @Option(name: .customShort("H"), help: "A header field, 'Name: value' (repeatable).") var header: [String] = []
    @Argument(help: "The URL.") var url: String

    func run() async throws {
        try await HTTPLoadRun(http: http, verbose: verbose, include: true, headers: header, method: "HEAD", body: nil).load(url)
    }
}

struct HTTPPostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "post", abstract: "POST data to a URL and print the answer's body.")
    @OptionGroup var http: HTTPOptions
    @Flag(name: .shortAndLong, help: "Show the protocol, TLS version, certificate, ATS decision and headers on standard error.") var verbose = false
    @Flag(name: .shortAndLong, help: "Print the status line and headers before the body.") var include = false
    @Option(name: .customShort("H"), help: "A header field, 'Name: value' (repeatable).") var header: [String] = []
    @Option(name: .shortAndLong, help: "The body; @FILE reads it from FILE, @- from standard input.") var data: String = ""
    @Argument(help: "The URL.") var url: String

    func run() async throws {
        var body = Data(data.utf8)
        if data.hasPrefix("@") {
            let path = String(data.dropFirst())
            guard let read = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: path) else {
                throw HTTPCommandFailure.usage("cannot read the body from \(path)").exit()
            }
            body = read
        }
        var headers = header
        if !headers.contains(where: { $0.lowercased().hasPrefix("content-type:") }) { headers.append("Content-Type: application/x-www-form-urlencoded") }
        try await HTTPLoadRun(http: http, verbose: verbose, include: include, headers: headers, method: "POST", body: body).load(url)
    }
}

struct HTTPDiagnoseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diagnose", abstract: "Try a URL under App Transport Security and each of its exceptions, and say which would pass.",
        discussion: "As nscurl --ats-diagnostics on macOS: each attempt is a fresh connection; the last line names the least exception that lets the load through.")
    @OptionGroup var http: HTTPOptions
    @Argument(help: "The URL (https).") var url: String

    func run() async throws {
        do {
            let configuration = try http.sessionConfiguration(verbose: false)
            guard let target = URL(string: url), URLSession.canLoad(target) else { throw HTTPCommandFailure.usage("'\(url)' is not an http or https URL with a host") }
            print("App Transport Security diagnostics for \(url)")
            let attempts = await ATSDiagnostics.run(target, base: configuration)
            for attempt in attempts {
                if let failure = attempt.failure {
                    print("  FAIL  \(attempt.name): \(HTTPLoadRun.shortReason(failure))")
                } else {
                    print("  PASS  \(attempt.name) (\(attempt.protocolName ?? "?")\(attempt.tlsVersion.map { ", \($0)" } ?? ""))")
                }
            }
            if attempts.first?.passed == true {
                print("result: passes App Transport Security as it is")
            } else if let least = ATSDiagnostics.leastException(attempts) {
                print("result: needs " + (least.exceptionKeys.isEmpty ? "no exception" : least.exceptionKeys.joined(separator: "; ")))
            } else if attempts.dropFirst().first?.passed == true {
                print("result: passes only with NSAllowsArbitraryLoads = true (no per-domain exception is enough)")
            } else {
                print("result: fails under every exception: \(attempts.first?.failure.map(HTTPLoadRun.shortReason) ?? "?")")
            }
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }
}

/// One load, printed as curl does.
struct HTTPLoadRun {
    var http: HTTPOptions
    var verbose: Bool
    var include: Bool
    var headers: [String]
    var method: String
    var body: Data?

    func load(_ text: String) async throws {
        do {
            guard let url = URL(string: text), URLSession.canLoad(url) else { throw HTTPCommandFailure.usage("'\(text)' is not an http or https URL with a host") }
            let session = try http.makeSession(verbose: verbose)
            var request = URLRequest(url: url)
            request.httpMethod = method
            request.httpBody = body
            for line in headers {
                guard let colon = line.firstIndex(of: ":") else { throw HTTPCommandFailure.usage("-H '\(line)' is not 'Name: value'") }
                request.setValue(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces), forHTTPHeaderField: String(line[..<colon]))
            }
            let answer: (Data, HTTPURLResponse)
            do { answer = try await session.data(for: request) } catch {
                await session.invalidateAndCancel()
                throw HTTPCommandFailure.load(error)
            }
            await session.invalidateAndCancel()
            let (data, response) = answer
            if verbose { for line in Self.verboseLines(response) { StandardStreams.error(Data("\(line)\n".utf8)) } }
            if include {
                var head = "\(response.metrics.networkProtocolName == "h2" ? "HTTP/2" : "HTTP/1.1") \(response.statusCode)\r\n"
                for field in response.headerFields { head += "\(field.name): \(field.value)\r\n" }
                StandardStreams.out(Data((head + "\r\n").utf8))
            }
            StandardStreams.out(data)
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }

    /// `-o FILE`: a download to FILE, resumed from FILE.netext-resume when that is there.
    func download(_ text: String, to path: String) async throws {
        do {
            guard let url = URL(string: text), URLSession.canLoad(url) else { throw HTTPCommandFailure.usage("'\(text)' is not an http or https URL with a host") }
            let session = try http.makeSession(verbose: verbose)
            let file = URL(fileURLWithPath: path)
            let resumeFile = URL(fileURLWithPath: path + ".netext-resume")
            let resume: DownloadResumeData?
            do { resume = try URLSession.resumeData(checkpoint: resumeFile) } catch { throw HTTPCommandFailure.usage(error.description) }
            if let resume, resume.url != url || resume.partialFile.standardizedFileURL != file.standardizedFileURL {
                throw HTTPCommandFailure.usage("\(resumeFile.path) is the resume data of \(resume.url.absoluteString) into \(resume.partialFile.path), not of this download; remove it to start over")
            }
            var progress: (@Sendable (Int64, Int64?) -> Void)?
            if verbose {
                progress = { (received: Int64, expected: Int64?) in
                    let total = expected.map { String($0) } ?? "?"
                    StandardStreams.error(Data("\r* \(received) of \(total) bytes".utf8))
                }
            }
            let response: HTTPURLResponse
            do {
                if let resume {
                    if verbose { StandardStreams.error(Data("* resuming after \(resume.bytesReceived) bytes (If-Range \(resume.validator))\n".utf8)) }
                    response = try await session.download(resumingFrom: resume, progress: progress).1
                } else {
                    response = try await session.download(for: URLRequest(url: url), to: file, checkpoint: resumeFile, progress: progress).1
                }
            } catch {
                await session.invalidateAndCancel()
                // The checkpoint stays for the next run when the download can go on; else it goes.
                if case .interrupted = error {} else { try? FileManager.default.removeItem(at: resumeFile) }
                throw HTTPCommandFailure.load(error)
            }
            await session.invalidateAndCancel()
            try? FileManager.default.removeItem(at: resumeFile)
            if verbose {
                StandardStreams.error(Data("\n".utf8))
                for line in Self.verboseLines(response) { StandardStreams.error(Data("\(line)\n".utf8)) }
            }
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }

    /// `--parallel N`: N loads at once on one session; prints
    /// `loads=N answered=N protocol=h2 connections=1 seconds=0.123`.
    func loadInParallel(_ text: String, count: Int) async throws {
        do {
            guard let url = URL(string: text), URLSession.canLoad(url) else { throw HTTPCommandFailure.usage("'\(text)' is not an http or https URL with a host") }
            let session = try http.makeSession(verbose: false)
            let started = ContinuousClock.now
            let results = await withTaskGroup(of: Result<HTTPURLResponse, HTTPLoadError>.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        do throws(HTTPLoadError) { return .success(try await session.data(from: url).1) } catch { return .failure(error) }
                    }
                }
                var all: [Result<HTTPURLResponse, HTTPLoadError>] = []
                for await result in group { all.append(result) }
                return all
            }
            let elapsed = ContinuousClock.now - started
            let connections = await session.connectionsOpened
            await session.invalidateAndCancel()
            let answers = results.compactMap { try? $0.get() }
            let protocols = Set(answers.map(\.metrics.networkProtocolName)).sorted().joined(separator: ",")
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("loads=\(count) answered=\(answers.count) protocol=\(protocols.isEmpty ? "none" : protocols) connections=\(connections) seconds=\(String(format: "%.3f", seconds))")
            if let failure = results.lazy.compactMap({ result -> HTTPLoadError? in if case .failure(let error) = result { return error } else { return nil } }).first {
                throw HTTPCommandFailure.load(failure)
            }
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }

    static func verboseLines(_ response: HTTPURLResponse) -> [String] {
        let metrics = response.metrics
        var lines = ["* connected to \(metrics.remoteAddress ?? "?") (\(metrics.networkProtocolName)\(metrics.negotiatedTLSProtocolVersion.map { ", \($0)" } ?? "")\(metrics.isReusedConnection ? ", reused" : ""))"]
        if let certificate = metrics.serverCertificate {
            lines.append("* certificate: \(certificate.commonName.map { "CN=\($0), " } ?? "")\(certificate.key), \(certificate.signatureAlgorithm), valid until \(ISO8601DateFormatter().string(from: certificate.notAfter))")
        }
        lines.append("< \(response.statusCode)\(metrics.redirectCount > 0 ? " after \(metrics.redirectCount) redirect(s)" : "")")
        for field in response.headerFields { lines.append("< \(field.name): \(field.value)") }
        return lines
    }

    /// A failure without its advice, for the diagnostics table.
    static func shortReason(_ failure: HTTPLoadError) -> String {
        if case .refused(let refusal) = failure { return "\(refusal.rule.rawValue): \(refusal.detail)" }
        return failure.description
    }
}

/// A `netext http` failure and its exit status.
enum HTTPCommandFailure: Error {
    case usage(String)
    case load(HTTPLoadError)

    func exit() -> ExitCode {
        switch self {
        case .usage(let message):
            StandardStreams.error(Data("netext: \(message)\n".utf8))
            return ExitCode(UsageError.exitCode)
        case .load(let error):
            StandardStreams.error(Data("netext: \(error.description)\n".utf8))
            switch error {
            case .refused: return ExitCode(12)
            case .deniedByURLFilter: return ExitCode(1)
            case .timedOut: return ExitCode(75)
            default: return ExitCode(5)
            }
        }
    }
}

/// `--user`: answers the first Digest or Basic challenge of a load with the credential; a refused
/// one is not sent again (the 401 is the answer), as curl does. `--pinned-key`: judges each new
/// TLS connection's server by its key alone.
final class CommandSessionDelegate: URLSessionDelegate {
    let credential: URLCredential?
    let pinnedKey: String?
    let log: (@Sendable (String) -> Void)?

    init(credential: URLCredential?, pinnedKey: String?, log: (@Sendable (String) -> Void)?) {
        self.credential = credential
        self.pinnedKey = pinnedKey
        self.log = log
    }

    func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        let space = challenge.protectionSpace
        if space.authenticationMethod == .serverTrust {
            guard let pinnedKey, let trust = space.serverTrust else { return (.performDefaultHandling, nil) }
            let key = trust.leaf?.spkiSHA256Base64 ?? "?"
            guard key == pinnedKey else {
                // Said whether or not -v: the load fails only as "cancelled".
                StandardStreams.error(Data("netext: \(space.host)'s certificate has the key \(key), not the pinned \(pinnedKey): refused\n".utf8))
                return (.cancelAuthenticationChallenge, nil)
            }
            if let failure = trust.evaluationFailure {
                log?("server trust: \(space.host)'s key is the pinned one: accepted although \(failure)")
                return (.useCredential, URLCredential(trust: trust))
            }
            log?("server trust: \(space.host)'s key is the pinned one")
            return (.performDefaultHandling, nil)
        }
        guard let credential else { return (.performDefaultHandling, nil) }
        let method = space.authenticationMethod == .httpDigest ? "Digest" : "Basic"
        guard challenge.previousFailureCount == 0 else {
            log?("\(method) credential for \(credential.user) refused (realm \(space.realm.map { "\"\($0)\"" } ?? "none"))")
            return (.performDefaultHandling, nil)
        }
        log?("answering the \(method) challenge (realm \(space.realm.map { "\"\($0)\"" } ?? "none")) as \(credential.user)\(space.receivesCredentialSecurely ? "" : ", over cleartext")")
        return (.useCredential, credential)
    }
}
