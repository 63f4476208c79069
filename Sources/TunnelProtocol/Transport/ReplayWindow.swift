/// The receive side's sliding anti-replay window over 64-bit counters, as RFC 6479 describes it
/// (a ring of 64-bit blocks; sliding forward clears whole blocks): 2048 bits, of which the newest
/// 1984 counters behind the highest one are always tracked.
public struct ReplayWindow: Sendable, Hashable {
    static let blockCount = 32
    static let windowSize = UInt64(blockCount * 64)
    /// Counters this far behind the highest seen are always refused.
    public static let trackedSpan = windowSize - 64

    private var blocks = [UInt64](repeating: 0, count: blockCount)
    private var highest: UInt64 = 0
    private var seenAny = false

    public init() {}

    /// Accepts `counter` if it was not seen before and is not too old, and records it.
    /// Call only after the packet authenticated (the counter is not trusted before).
    public mutating func accept(_ counter: UInt64) -> Bool {
        if seenAny, counter < highest, highest - counter >= Self.trackedSpan { return false }
        let block = counter >> 6
        if !seenAny || counter > highest {
            let current = highest >> 6
            let advance = seenAny ? min(block - current, UInt64(Self.blockCount)) : UInt64(Self.blockCount)
            if advance > 0 {
                for step in 1...advance {
                    blocks[Int((current + step) & UInt64(Self.blockCount - 1))] = 0
                }
            }
            highest = counter
            seenAny = true
        }
        let index = Int(block & UInt64(Self.blockCount - 1))
        let bit: UInt64 = 1 << (counter & 63)
        if blocks[index] & bit != 0 { return false }
        blocks[index] |= bit
        return true
    }
}
