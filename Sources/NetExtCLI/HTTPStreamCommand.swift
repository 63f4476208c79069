import ArgumentParser
import Foundation
import NetExtHTTP

/// `netext http stream HOST PORT`: a stream task as a netcat — standard input to the
/// connection, the connection to standard output, the task's events on standard error.
struct HTTPStreamCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stream",
        abstract: "Open a stream task (a TCP connection through the session's proxy, TLS on demand) and copy standard input to it and it to standard output.",
        discussion: """
            The task's events go to standard error as `* readClosed`, `* writeClosed`, `* secureConnectionStarted TLS 1.3`, \
            `* betterRouteDiscovered` (the machine would now reach the peer another way). End of standard input closes \
            the writing side; the command ends when the peer closes. With --proxy the connection goes through an HTTP \
            proxy's CONNECT or SOCKS5.
            """)
    @OptionGroup var http: HTTPOptions
    @Flag(name: .customLong("tls"), help: "Start TLS at once (held to App Transport Security's rules for the host).") var tls = false
    @Argument(help: "The host.") var host: String
    @Argument(help: "The port.") var port: Int

    func run() async throws {
        do {
            guard (1...65_535).contains(port) else { throw HTTPCommandFailure.usage("the port \(port) is not 1–65535") }
            let session = try http.makeSession(verbose: false)
            let task = session.streamTask(withHostName: host, port: port)
            do {
                try await task.resume()
                if tls { try await task.startSecureConnection() }
            } catch { throw HTTPCommandFailure.load(error) }
            let events = Task {
                for await event in task.events {
                    switch event {
                    case .readClosed: StandardStreams.error("* readClosed\n")
                    case .writeClosed: StandardStreams.error("* writeClosed\n")
                    case .secureConnectionStarted(let version): StandardStreams.error("* secureConnectionStarted \(version ?? "?")\n")
                    case .betterRouteDiscovered: StandardStreams.error("* betterRouteDiscovered\n")
                    }
                }
            }
            StandardStreams.error("* connected to \(host):\(port)\n")
            // Standard input on a thread of its own (blocking reads), handed to the task in order.
            let (input, feed) = AsyncStream.makeStream(of: Data.self)
            Thread.detachNewThread {
                while true {
                    let chunk = FileHandle.standardInput.availableData
                    if chunk.isEmpty { break }
                    feed.yield(chunk)
                }
                feed.finish()
            }
            let writer = Task {
                for await chunk in input { try? await task.write(chunk, timeout: http.maxTime) }
                task.closeWrite()
            }
            while true {
                let (data, atEOF): (Data, Bool)
                do { (data, atEOF) = try await task.readData(ofMinLength: 1, maxLength: 65_536, timeout: 24 * 3600) } catch {
                    throw HTTPCommandFailure.load(error)
                }
                if !data.isEmpty { StandardStreams.out(data) }
                if atEOF { break }
            }
            writer.cancel()
            task.cancel()
            _ = await events.value
        } catch let failure as HTTPCommandFailure {
            throw failure.exit()
        }
    }
}
