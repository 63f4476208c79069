import NetExt
import NetExtCore
import NetExtTesting
import Testing

@Suite("In-memory packet flow")
struct MemoryPacketFlowTests {
    static func packet(_ byte: UInt8, length: Int = 40) -> TunnelPacket {
        TunnelPacket(data: [0x45] + [UInt8](repeating: byte, count: length - 1))
    }

    @Test("what one end writes the other reads, in order, in batches of at most the limit")
    func order() async throws {
        let (provider, system) = MemoryPacketFlow.pair()
        try system.writePackets((0..<10).map { Self.packet($0) })
        let first = try await provider.readPackets(limit: 4)
        let rest = try await provider.readPackets(limit: 64)
        #expect(first.map { $0.data[1] } == [0, 1, 2, 3])
        #expect(rest.map { $0.data[1] } == Array(4..<10))
        try provider.writePackets([Self.packet(42)])
        #expect(try await system.readPackets().map { $0.data[1] } == [42])
        #expect(first[0].protocolFamily == TunnelPacket(data: [0x45]).protocolFamily)
    }

    @Test("a reader waits for the writer")
    func waits() async throws {
        let (provider, system) = MemoryPacketFlow.pair()
        async let read = provider.readPackets()
        try await Task.sleep(for: .milliseconds(20))
        try system.writePackets([Self.packet(7)])
        #expect(try await read.map { $0.data[1] } == [7])
    }

    @Test("empty packets and packets over the MTU are dropped; a full queue drops and counts")
    func drops() async throws {
        let (provider, system) = MemoryPacketFlow.pair(mtu: 1400, capacity: 3)
        try system.writePackets([TunnelPacket(data: []), Self.packet(1, length: 1401), Self.packet(2, length: 1400)])
        #expect(try await provider.readPackets().map(\.data.count) == [1400])
        try system.writePackets((0..<5).map { Self.packet($0) })
        #expect(system.droppedWrites == 2)
        #expect(try await provider.readPackets().count == 3)
    }

    @Test("closing ends a waiting read and later writes")
    func close() async throws {
        let (provider, system) = MemoryPacketFlow.pair()
        let read = Task { try await provider.readPackets() }
        try await Task.sleep(for: .milliseconds(20))
        system.close()
        await #expect(throws: MemoryPacketFlowError.self) { _ = try await read.value }
        #expect(throws: MemoryPacketFlowError.self) { try provider.writePackets([Self.packet(1)]) }
    }
}

/// The example in docs/providers.md, kept true.
@Test("docs/providers.md: a provider's packet handling tested over the memory pair")
func providersDocumentationExample() async throws {
    let (provider, system) = MemoryPacketFlow.pair(mtu: 1400)
    let echo = Task { try provider.writePackets(try await provider.readPackets()) }
    try system.writePackets([TunnelPacket(data: [0x45, 0, 0, 20])])
    #expect(try await system.readPackets().first?.data == [0x45, 0, 0, 20])
    _ = await echo.result
}
