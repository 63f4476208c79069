import Foundation
import Testing
@testable import HTTPServing
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request over a socket the caller connected (what the captive portal detection
/// uses for the RFC 8908 API: its socket bound to an interface and marked), against NetExt's
/// HTTP server on loopback (which keeps Host to itself): the answer and the request's path,
/// query and headers as sent, a body over the limit refused,
/// a server that never answers timing out, and the socket closed whatever happened.
@Suite("HTTP over a connected socket")
struct HTTPOverConnectedSocketTests {
    /// A blocking TCP connection to 127.0.0.1:`port`.
    static func connected(to port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let result = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard result == 0 else {
            close(fd)
            throw HTTPUpstream.Failure.unreachable("cannot connect to 127.0.0.1:\(port)")
        }
        return fd
    }

    @Test func theAnswerComesBackAndTheRequestCarriesItsHostPathAndHeaders() async throws {
        let target = RecordingTarget()
        let (server, port) = try await HTTPServerLimitsTests.serve(target, limits: HTTPServerLimits())
        let fd = try Self.connected(to: port)
        let response = try await HTTPOverConnectedSocket.exchange(
            descriptor: fd, url: URL(string: "http://127.0.0.1:\(port)/capport?probe=1")!, headers: [("Accept", "application/captive+json"), ("Connection", "keep-alive")],
            tls: nil, bodyLimit: 1024, timeout: 5)
        #expect(response.status == 200)
        #expect(response.header("x-target-secret") == "leak")
        let request = try #require(target.requests.withLock { $0.first })
        #expect(request.path == "/capport" && request.query == "probe=1")
        #expect(request.headers.contains { $0.name.lowercased() == "accept" && $0.value == "application/captive+json" })
        #expect(request.headers.filter { $0.name.lowercased() == "connection" }.map(\.value) == ["close"], "the caller's Connection is replaced by close")
        await server.shutdown()
    }

    @Test func anAnswerLargerThanTheLimitIsRefused() async throws {
        let (server, port) = try await HTTPServerLimitsTests.serve(SlowResponder(delay: .zero), limits: HTTPServerLimits())
        let fd = try Self.connected(to: port)
        await #expect { try await HTTPOverConnectedSocket.exchange(descriptor: fd, url: URL(string: "http://127.0.0.1:\(port)/")!, headers: [], tls: nil, bodyLimit: 2, timeout: 5) } throws: {
            "\($0)".contains("larger than 2 bytes")
        }
        await server.shutdown()
    }

    @Test func aServerThatNeverAnswersTimesOutWithinTheDeadline() async throws {
        let (server, port) = try await HTTPServerLimitsTests.serve(SlowResponder(delay: .seconds(20)), limits: HTTPServerLimits())
        let fd = try Self.connected(to: port)
        let began = ContinuousClock.now
        await #expect { try await HTTPOverConnectedSocket.exchange(descriptor: fd, url: URL(string: "http://127.0.0.1:\(port)/")!, headers: [], tls: nil, bodyLimit: 1024, timeout: 0.5) } throws: {
            ($0 as? HTTPUpstream.Failure) == .timedOut(seconds: 0)
        }
        #expect(ContinuousClock.now - began < .seconds(10))
        await server.shutdown()
    }

    @Test func aURLThatIsNotHTTPIsRefusedAndTheSocketClosed() async throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[1]) }
        await #expect { try await HTTPOverConnectedSocket.exchange(descriptor: pair[0], url: URL(string: "ftp://127.0.0.1/")!, headers: [], tls: nil, bodyLimit: 1, timeout: 1) } throws: {
            "\($0)".contains("is not an http or https URL")
        }
        // The exchange owns the descriptor: closed, its peer reads the end of the stream.
        var byte: UInt8 = 0
        #expect(recv(pair[1], &byte, 1, Int32(MSG_DONTWAIT)) == 0, "the exchange closed the descriptor it was given")
    }
}
