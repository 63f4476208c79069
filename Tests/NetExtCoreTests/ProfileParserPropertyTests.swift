import Foundation
import NetExtTestSupport
import Testing
@testable import NetExtCore

@Suite("Profile parser properties")
struct ProfileParserPropertyTests {
    /// Mutated profiles (bytes flipped, inserted, deleted, truncated) never crash the parser:
    /// each either parses into valid configurations or is refused with a non-empty message.
    @Test("mutated profiles parse or are refused, never crash", arguments: ["enterprise-vpn.mobileconfig", "enterprise-vpn-binary.mobileconfig", "relay.mobileconfig"])
    func mutationsNeverCrash(file: String) throws {
        let original = [UInt8](try Fixtures.profile(file))
        var generator = SplitMix64(state: 0xC0FFEE ^ UInt64(file.count))
        var parsed = 0
        var refused = 0
        for _ in 0..<1500 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: position)
                case 2: bytes.remove(at: position)
                default: bytes = Array(bytes.prefix(position))
                }
                if bytes.isEmpty { break }
            }
            do {
                let profile = try ProfileParser.parse(Data(bytes), owner: Owner(uid: 0, appIdentifier: "t"))
                for item in profile.configurations { try item.configuration.validate() }
                parsed += 1
            } catch {
                #expect(!error.message.isEmpty)
                refused += 1
            }
        }
        #expect(parsed + refused == 1500)
        #expect(refused > 0)
    }

    /// Every configuration survives a JSON round trip unchanged (the store and the wire rely on it).
    @Test("configurations round-trip through JSON")
    func jsonRoundTrip() throws {
        let profile = try ProfileParser.parse(try Fixtures.profile("enterprise-vpn.mobileconfig"), owner: Owner(uid: 7, appIdentifier: "a"))
        for item in profile.configurations {
            let data = try JSONEncoder().encode(item.configuration)
            #expect(try JSONDecoder().decode(Configuration.self, from: data) == item.configuration)
        }
    }
}
