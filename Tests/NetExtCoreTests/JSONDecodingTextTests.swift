import Foundation
import NetExtCore
import Testing

@Suite("JSON decoding errors as sentences")
struct JSONDecodingTextTests {
    struct Server: Decodable {
        struct Peer: Decodable { var name: String; var publicKey: String }
        var listen: String
        var mtu: Int?
        var peers: [Peer]
    }

    func message(_ text: String) -> String {
        let data = Data(text.utf8)
        do {
            _ = try JSONDecoder().decode(Server.self, from: data)
            return "decoded"
        } catch {
            return JSONDecodingText.describe(error, data: data)
        }
    }

    @Test("a missing key, a wrong type, a null: the key named with its path, array positions in brackets")
    func keys() {
        #expect(message(#"{"listen": "x", "peers": [{"name": "a", "publicKey": "k"}, {"name": "b"}]}"#) == "key 'peers[1].publicKey' is required")
        #expect(message(#"{"listen": 5, "peers": []}"#) == "key 'listen': expected a string")
        #expect(message(#"{"listen": "x", "mtu": "1420", "peers": []}"#) == "key 'mtu': expected a number")
        #expect(message(#"{"listen": "x", "peers": {}}"#) == "key 'peers': expected a list")
        #expect(message(#"{"listen": null, "peers": []}"#).hasPrefix("key 'listen'"))
        #expect(message(#"{"peers": []}"#) == "key 'listen' is required")
    }

    @Test("a syntax error: where it is, by line and column")
    func syntax() {
        #expect(message("{\"listen\": \"x\",\n  \"peers\": x}") == "not valid JSON: invalid value at line 2, column 12")
        #expect(message(#"{"listen": "x", "peers": ["#) == "not valid JSON: unexpected end of file during JSON parse")
        #expect(message("") .hasPrefix("not valid JSON"))
    }

    @Test("never a type dump, whatever the document: random bytes and truncations give a sentence")
    func neverADump() {
        var generator = SystemRandomNumberGenerator()
        let valid = #"{"listen": "0.0.0.0:1", "mtu": 1400, "peers": [{"name": "a", "publicKey": "k"}]}"#
        for length in 0..<valid.utf8.count {
            let text = String(valid.prefix(length))
            let result = message(text)
            #expect(!result.contains("CodingKeys") && !result.contains("DecodingError") && !result.contains("Context("), "\(text): \(result)")
        }
        for _ in 0..<200 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let result = message(String(decoding: bytes, as: UTF8.self))
            #expect(result.hasPrefix("not valid JSON") || result.hasPrefix("key '") || result.hasPrefix("the document"), "\(bytes): \(result)")
        }
    }
}
