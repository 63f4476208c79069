import NetExtIPC
import NetExtLinux
import NetExtTransport
import NIOCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Framed connections")
struct FramedConnectionTests {
    @Test("a frame the peer sent before the socket was adopted arrives (a provider's hello races netextd's adopt)")
    func frameSentBeforeAdopt() async throws {
        for round in 0..<20 {
            let (ours, theirs) = try SocketPair.make()
            let payload = Array("hello \(round)".utf8)
            let frame = [UInt8(0), 0, 0, UInt8(payload.count)] + payload
            let written = frame.withUnsafeBytes { write(theirs, $0.baseAddress, $0.count) }
            #expect(written == frame.count)
            let connection = try await FramedConnection.adopt(descriptor: ours)
            // The frame, or nil if none arrives within 10 s (a lost frame would wait forever).
            let received = await withTaskGroup(of: ByteBuffer?.self) { group in
                group.addTask {
                    var iterator = connection.frames.makeAsyncIterator()
                    return await iterator.next()
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(10))
                    connection.close()
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            #expect(received.map { Array($0.readableBytesView) } == payload, "round \(round)")
            connection.close()
            SocketPair.close(theirs)
        }
    }
}
