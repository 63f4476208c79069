import Foundation
import NetExtCore

/// Constants and codecs of the control protocol between netextd and its clients.
public enum ControlProtocol {
    /// The protocol version this build speaks. A peer must send it in `hello`.
    public static let version = 1

    /// The JSON encoder used for every message (sorted keys, ISO 8601 dates).
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        encoder.dataEncodingStrategy = .base64
        return encoder
    }

    /// The JSON decoder used for every message.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        decoder.dataDecodingStrategy = .base64
        return decoder
    }

    /// Encodes a message and frames it.
    public static func framed<Message: Encodable>(_ message: Message) throws -> [UInt8] {
        FrameDecoder.frame(Array(try makeEncoder().encode(message)))
    }
}
