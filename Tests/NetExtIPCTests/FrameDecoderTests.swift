import Foundation
import Testing
@testable import NetExtIPC

@Suite("Control-protocol framing")
struct FrameDecoderTests {
    let payloads: [[UInt8]] = [[], Array("hello".utf8), [UInt8](repeating: 0xAB, count: 70_000), Array("{\"id\":1}".utf8)]

    @Test("frames survive any split of the byte stream")
    func splitInput() throws {
        let stream = payloads.flatMap(FrameDecoder.frame)
        var generator = SystemRandomNumberGenerator()
        for chunkLimit in [1, 2, 3, 7, 4096, stream.count] {
            var decoder = FrameDecoder()
            var decoded: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let size = min(stream.count - offset, Int.random(in: 1...chunkLimit, using: &generator))
                decoder.append(stream[offset..<offset + size])
                offset += size
                while let frame = try decoder.nextFrame() { decoded.append(frame) }
            }
            #expect(decoded == payloads, "chunk limit \(chunkLimit)")
        }
    }

    @Test("an announced length above the maximum is refused")
    func oversize() {
        var decoder = FrameDecoder()
        decoder.append([0x7F, 0xFF, 0xFF, 0xFF, 0x00])
        let error = #expect(throws: FrameError.self) { try decoder.nextFrame() }
        #expect(error?.announcedLength == 0x7FFF_FFFF)
    }

    @Test("an incomplete frame waits for more bytes")
    func incomplete() throws {
        var decoder = FrameDecoder()
        decoder.append(FrameDecoder.frame(Array("abc".utf8)).dropLast())
        #expect(try decoder.nextFrame() == nil)
        decoder.append([UInt8(ascii: "c")])
        #expect(try decoder.nextFrame() == Array("abc".utf8))
    }
}
