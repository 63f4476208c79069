import NetExtCore
import Testing

@Suite("Durations and byte counts in words")
struct HumanUnitsTests {
    @Test("durations: the two largest non-zero units, singular and plural, as wg show counts them")
    func durations() {
        #expect(HumanUnits.duration(0) == "0 seconds")
        #expect(HumanUnits.duration(0.9) == "0 seconds")
        #expect(HumanUnits.duration(1) == "1 second")
        #expect(HumanUnits.duration(64) == "1 minute, 4 seconds")
        #expect(HumanUnits.duration(3_600) == "1 hour")
        #expect(HumanUnits.duration(3_605) == "1 hour, 5 seconds")
        #expect(HumanUnits.duration(2 * 86_400 + 3 * 3_600 + 59) == "2 days, 3 hours")
        #expect(HumanUnits.duration(-5) == "0 seconds", "a clock that stepped back never shows a negative age")
        #expect(HumanUnits.ago(0.4) == "just now")
        #expect(HumanUnits.ago(12) == "12 seconds ago")
    }

    @Test("byte counts in decimal units")
    func bytes() {
        #expect(HumanUnits.bytes(0) == "0 B")
        #expect(HumanUnits.bytes(999) == "999 B")
        #expect(HumanUnits.bytes(1_000) == "1.0 kB")
        #expect(HumanUnits.bytes(3_145_728) == "3.1 MB")
        #expect(HumanUnits.bytes(UInt64.max) == "18446744.1 TB")
    }
}
