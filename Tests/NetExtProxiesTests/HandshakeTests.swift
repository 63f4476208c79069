import Foundation
import NetExtLinux
import Synchronization
import Testing
@testable import NetExtProxies

@Suite("SOCKS 5 and HTTP CONNECT handshakes (RFC 1928, RFC 1929, RFC 9110 §9.3.6)")
struct HandshakeTests {
    @Test("the greeting offers no authentication, and user name/password only with credentials")
    func greeting() {
        #expect(SOCKS5Handshake.greeting(offeringPassword: false) == [5, 1, 0])
        #expect(SOCKS5Handshake.greeting(offeringPassword: true) == [5, 2, 0, 2])
    }

    @Test("the method selection is read, and refusals are sentences")
    func methodSelection() throws {
        #expect(try SOCKS5Handshake.passwordRequired(byMethodSelection: [5, 0], offeredPassword: true) == false)
        #expect(try SOCKS5Handshake.passwordRequired(byMethodSelection: [5, 2], offeredPassword: true) == true)
        let cases: [([UInt8], Bool, String)] = [
            ([5, 0xFF], true, "accepts none of the offered"),
            ([5, 2], false, "requires a user name and password"),
            ([4, 0], false, "did not answer as SOCKS 5"),
            ([5, 1], false, "method 1, which was not offered"),
            ([5], false, "did not answer as SOCKS 5"),
        ]
        for (reply, offered, expected) in cases {
            #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.passwordRequired(byMethodSelection: reply, offeredPassword: offered) }
            do { _ = try SOCKS5Handshake.passwordRequired(byMethodSelection: reply, offeredPassword: offered) } catch {
                #expect(error.description.contains(expected), "\(reply): \(error)")
            }
        }
    }

    @Test("RFC 1929 user name/password request and reply")
    func password() throws {
        #expect(try SOCKS5Handshake.passwordRequest(username: "ann", password: "pw") == [1, 3, 97, 110, 110, 2, 112, 119])
        #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.passwordRequest(username: String(repeating: "a", count: 256), password: "x") }
        #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.passwordRequest(username: "a", password: "") }
        try SOCKS5Handshake.checkPasswordReply([1, 0])
        #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.checkPasswordReply([1, 1]) }
        #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.checkPasswordReply([5, 0]) }
    }

    @Test("CONNECT carries IPv4, IPv6 and names with their address types (RFC 1928 §4)")
    func connect() throws {
        #expect(try SOCKS5Handshake.connectRequest(host: "192.0.2.7", port: 443) == [5, 1, 0, 1, 192, 0, 2, 7, 1, 187])
        #expect(try SOCKS5Handshake.connectRequest(host: "2001:db8::1", port: 80) == [5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1, 0, 80])
        #expect(try SOCKS5Handshake.connectRequest(host: "www.site.test", port: 8080) == [5, 1, 0, 3, 13] + Array("www.site.test".utf8) + [0x1F, 0x90])
        #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.connectRequest(host: String(repeating: "a", count: 256), port: 1) }
    }

    @Test("the CONNECT reply: its length by address type, and the server's refusal named")
    func reply() throws {
        #expect(try SOCKS5Handshake.remainingReplyLength(afterFirst5: [5, 0, 0, 1, 10]) == 5)
        #expect(try SOCKS5Handshake.remainingReplyLength(afterFirst5: [5, 0, 0, 4, 0x20]) == 17)
        #expect(try SOCKS5Handshake.remainingReplyLength(afterFirst5: [5, 0, 0, 3, 9]) == 11)
        do {
            _ = try SOCKS5Handshake.remainingReplyLength(afterFirst5: [5, 5, 0, 1, 0])
            Issue.record("a refusal was accepted")
        } catch { #expect(error.description == "the SOCKS server refused the connection: connection refused") }
        for malformed: [UInt8] in [[5, 0, 1, 1, 0], [5, 0, 0, 2, 0], [4, 0, 0, 1, 0], [5, 0, 0, 1]] {
            #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.remainingReplyLength(afterFirst5: malformed) }
        }
    }

    @Test("any five reply bytes are read or refused, never trapped on (property)")
    func replyProperty() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let bytes = (0..<5).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if let rest = try? SOCKS5Handshake.remainingReplyLength(afterFirst5: bytes) {
                #expect(bytes[0] == 5 && bytes[1] == 0 && bytes[2] == 0 && (1...257).contains(rest))
            }
        }
    }

    @Test("UDP ASSOCIATE (RFC 1928 §4, §7): the request, the relay's address, datagram headers both ways")
    func udpAssociate() throws {
        #expect(SOCKS5Handshake.udpAssociateRequest == [5, 3, 0, 1, 0, 0, 0, 0, 0, 0])
        let bound = try SOCKS5Handshake.boundEndpoint(first5: [5, 0, 0, 1, 203], rest: [0, 113, 2, 0x8F, 0x1D])
        #expect(bound.host == "203.0.113.2" && bound.port == 36637)
        let named = try SOCKS5Handshake.boundEndpoint(first5: [5, 0, 0, 3, 5], rest: Array("relay".utf8) + [0, 80])
        #expect(named.host == "relay" && named.port == 80)
        #expect(throws: SOCKS5Handshake.Failure.self) { try SOCKS5Handshake.boundEndpoint(first5: [5, 0, 0, 1, 1], rest: [2, 0, 80]) }
        #expect(SOCKS5Handshake.udpDatagram(to: "10.20.0.5", port: 7, data: [9, 9]) == [0, 0, 0, 1, 10, 20, 0, 5, 0, 7, 9, 9])
        #expect(SOCKS5Handshake.udpDatagram(to: "www.site.test", port: 53, data: [1]) == [0, 0, 0, 3, 13] + Array("www.site.test".utf8) + [0, 53, 1])
        #expect(SOCKS5Handshake.udpDatagram(to: String(repeating: "a", count: 256), port: 1, data: [1]) == nil)
        #expect(SOCKS5Handshake.udpPayloadOffset([0, 0, 0, 1, 10, 20, 0, 5, 0, 7, 9, 9]) == 10)
        #expect(SOCKS5Handshake.udpPayloadOffset([0, 0, 0, 4] + [UInt8](repeating: 0, count: 18)) == 22)
        #expect(SOCKS5Handshake.udpPayloadOffset([0, 0, 1, 1, 10, 20, 0, 5, 0, 7]) == nil, "a fragment is dropped")
        #expect(SOCKS5Handshake.udpPayloadOffset([0, 0, 0, 3, 9, 1]) == nil, "truncated")
    }

    @Test("any relay datagram is read or dropped, and a payload offset lies within it (property)")
    func udpProperty() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20_000 {
            var bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if round % 2 == 0, bytes.count >= 4 { bytes[0] = 0; bytes[1] = 0; bytes[2] = 0; bytes[3] = [1, 3, 4][round % 3] }
            if let offset = SOCKS5Handshake.udpPayloadOffset(bytes) { #expect(offset <= bytes.count && offset >= 7) }
        }
    }

    @Test("HTTP CONNECT: the request with its authority and Basic credentials")
    func httpRequest() {
        let plain = String(decoding: HTTPConnectHandshake.request(host: "192.0.2.7", port: 443), as: UTF8.self)
        #expect(plain == "CONNECT 192.0.2.7:443 HTTP/1.1\r\nHost: 192.0.2.7:443\r\n\r\n")
        let v6 = String(decoding: HTTPConnectHandshake.request(host: "2001:db8::1", port: 80, username: "Aladdin", password: "open sesame"), as: UTF8.self)
        // RFC 7617 §2's example credentials.
        #expect(v6 == "CONNECT [2001:db8::1]:80 HTTP/1.1\r\nHost: [2001:db8::1]:80\r\nProxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n")
    }

    @Test("HTTP CONNECT: the head's end is found and the status decides")
    func httpResponse() throws {
        let head = Array("HTTP/1.1 200 Connection established\r\nProxy-Agent: x\r\n\r\nextra".utf8)
        #expect(HTTPConnectHandshake.headEnd(in: head) == head.count - 5)
        #expect(HTTPConnectHandshake.headEnd(in: Array("HTTP/1.1 200 OK\r\n".utf8)) == nil)
        try HTTPConnectHandshake.checkResponse(head: head)
        do {
            try HTTPConnectHandshake.checkResponse(head: Array("HTTP/1.0 403 Forbidden\r\n\r\n".utf8))
            Issue.record("403 accepted")
        } catch { #expect(error.description == "the HTTP proxy refused the tunnel: 403 Forbidden") }
        #expect(throws: HTTPConnectHandshake.Failure.self) { try HTTPConnectHandshake.checkResponse(head: Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)) }
        #expect(throws: HTTPConnectHandshake.Failure.self) { try HTTPConnectHandshake.checkResponse(head: Array("HTTP/1.1 abc\r\n\r\n".utf8)) }
    }

    @Test("the provider's settings: host:port, the upstream kind, and errors naming the key")
    func settings() throws {
        let socks = try ForwardingProxyProvider.settings(serverAddress: "127.0.0.1:1080", providerConfiguration: [:], username: nil, password: nil)
        #expect(socks.upstream == .socks5 && socks.server.map(\.description) == ["127.0.0.1:1080"] && socks.username == nil)
        let http = try ForwardingProxyProvider.settings(serverAddress: "[::1]:3128", providerConfiguration: ["upstream": .string("http-connect")], username: "u", password: "p")
        #expect(http.upstream == .httpConnect && http.server.map(\.description) == ["[::1]:3128"] && http.username == "u")
        do {
            _ = try ForwardingProxyProvider.settings(serverAddress: "127.0.0.1:1080", providerConfiguration: ["upstream": .string("socks4")], username: nil, password: nil)
            Issue.record("socks4 accepted")
        } catch { #expect(error.message.contains("'upstream'")) }
        do {
            _ = try ForwardingProxyProvider.settings(serverAddress: "proxy.example", providerConfiguration: [:], username: nil, password: nil)
            Issue.record("no port accepted")
        } catch { #expect(error.message.contains("host:port")) }
    }

    @Test("a transparent proxy's include list: prefix or host, port and protocol (TCP when none is named); errors name the key and the item")
    func transparentRules() throws {
        let (rules, hosts) = try ForwardingProxyProvider.transparentRules([
            "include": .string("0.0.0.0/0 8080, ::/0 8080 any, 100.64.0.80/32 7 udp, 10.0.0.0/8 tcp, WWW.Site.Test 8080, intranet any, inbound 203.0.113.0/24 9090"), "hosts": .string("WWW.site.test, "),
        ])
        #expect(rules.map(\.description) == [
            "0.0.0.0/0 port 8080 tcp", "::/0 port 8080 any", "100.64.0.80/32 port 7 udp", "10.0.0.0/8 tcp", "host www.site.test port 8080 tcp", "host intranet any",
            "inbound from 203.0.113.0/24 to port 9090 tcp",
        ])
        #expect(hosts == ["www.site.test"])
        for (bad, named) in [("0.0.0.0/0 8080 sctp", "'0.0.0.0/0 8080 sctp'"), ("0.0.0.0/0 0", "'0'"), ("udp", "'udp'"), ("300.0.0.0/8", "'300.0.0.0/8'"), ("bad_host! 80", "'bad_host! 80'"), ("inbound nowhere 22", "'inbound nowhere 22'"), ("inbound 0.0.0.0/0 0", "'0'")] {
            do {
                _ = try ForwardingProxyProvider.transparentRules(["include": .string(bad)])
                Issue.record("'\(bad)' accepted")
            } catch { #expect(error.message.contains("'include'") && error.message.contains(named), "\(error.message)") }
        }
    }

    /// A one-connection SOCKS 5 server on loopback: it waits until `expected` bytes arrived
    /// before answering anything (so a client that waits for the method choice before sending
    /// its request never finishes), then gives the method choice and a success reply.
    final class Received: Sendable {
        let bytes = Mutex<[UInt8]?>(nil)
    }

    static func pipelineServer(expecting expected: [UInt8]) throws -> (address: SocketAddress, received: Received, thread: Thread) {
        let listener = try TCPSocket.listen(on: SocketAddress("127.0.0.1:0")!)
        guard let address = SocketEndpoints.local(of: listener.fd) else { throw SystemError("getsockname", errno: EINVAL) }
        let received = Received()
        let thread = Thread {
            defer { listener.close() }
            guard let connection = try? listener.accept(waitMilliseconds: 5_000) else { return }
            defer { connection.close() }
            connection.setTimeouts(milliseconds: 2_000)
            let bytes = connection.read(exactly: expected.count)
            received.bytes.withLock { $0 = bytes }
            guard bytes == expected else { return }
            _ = connection.write([5, 0] + [5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90])
        }
        thread.start()
        return (address, received, thread)
    }

    @Test("without credentials the CONNECT request goes with the greeting (one round trip); the server's choice is still checked")
    func pipelinedHandshake() throws {
        let expected = SOCKS5Handshake.greeting(offeringPassword: false) + (try SOCKS5Handshake.connectRequest(host: "www.site.test", port: 8080))
        let server = try Self.pipelineServer(expecting: expected)
        let settings = ForwardingProxyProvider.Settings(upstream: .socks5, server: [server.address], serverText: "\(server.address)")
        let socket = try ForwardingProxyProvider.open(toward: "www.site.test", port: 8080, settings: settings)
        socket.close()
        #expect(server.received.bytes.withLock { $0 } == expected)
    }
}
