import Foundation
import NetExtCore

/// Constants and codecs of the control protocol between netextd and its clients.
public enum ControlProtocol {
    /// The protocol version this build speaks. A peer must send it in `hello`.
    /// Version 2 lets requests name a configuration by `name` instead of `id`; its messages are
    /// otherwise version 1's, so netextd accepts both (`supportedVersions`).
    public static let version = 2

    /// The versions netextd accepts in `hello`.
    public static let supportedVersions: ClosedRange<Int> = 1...2

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

    /// Encodes a message as a frame's payload (the transport adds the length).
    public static func payload<Message: Encodable>(_ message: Message) throws -> Data {
        try makeEncoder().encode(message)
    }
}
