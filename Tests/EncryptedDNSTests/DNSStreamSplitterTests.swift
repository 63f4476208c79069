import NetExtTestSupport
import Testing
@testable import EncryptedDNS

@Suite("Splitting DNS messages from a TCP stream (RFC 1035 §4.2.2)")
struct DNSStreamSplitterTests {
    @Test("messages framed, joined and fed in pieces of any size come out whole and in order (property, 500 streams)")
    func roundTrip() {
        var random = SplitMix64(state: 23)
        for _ in 0..<500 {
            let messages = (0..<Int.random(in: 1...20, using: &random)).map { _ in
                (0..<Int.random(in: 1...(Bool.random(using: &random) ? 600 : 70_000 / 20), using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            let stream = messages.flatMap { DNSStreamSplitter.frame($0)! }
            var splitter = DNSStreamSplitter()
            var out: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let piece = min(stream.count - offset, Int.random(in: 1...4_000, using: &random))
                out += splitter.append(stream[offset..<(offset + piece)])
                offset += piece
                #expect(splitter.bufferedCount <= 2 + 65_535)
            }
            #expect(out == messages)
            #expect(splitter.bufferedCount == 0)
        }
    }

    @Test("a partial frame waits; a zero-length frame is an empty message; an oversized message cannot be framed")
    func edges() {
        var splitter = DNSStreamSplitter()
        #expect(splitter.append([0x00]).isEmpty)
        #expect(splitter.append([0x03, 1, 2]).isEmpty && splitter.bufferedCount == 4)
        #expect(splitter.append([3, 0x00, 0x00]) == [[1, 2, 3], []])
        #expect(splitter.bufferedCount == 0)
        #expect(DNSStreamSplitter.frame([UInt8](repeating: 0, count: 65_536)) == nil)
        #expect(DNSStreamSplitter.frame([UInt8](repeating: 7, count: 65_535))?.prefix(2) == [0xFF, 0xFF])
    }

    @Test("any bytes at all are split or kept without trapping, and never more than one frame is kept (fuzz, 2,000 inputs)")
    func fuzz() {
        var random = SplitMix64(state: 7)
        for _ in 0..<2_000 {
            var splitter = DNSStreamSplitter()
            var total = 0
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let bytes = (0..<Int.random(in: 0...3_000, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                let messages = splitter.append(bytes)
                total += bytes.count
                #expect(messages.reduce(0) { $0 + 2 + $1.count } + splitter.bufferedCount <= total)
                #expect(splitter.bufferedCount <= 2 + 65_535)
            }
        }
    }
}
