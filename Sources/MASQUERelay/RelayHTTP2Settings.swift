import NIOHTTP2

/// The HTTP/2 settings both ends of a relay connection use. A tunnel is a bulk stream, so the
/// windows are far larger than HTTP/2's 64 KiB default (which held a flow to 1.9 Gbit/s on
/// loopback: BENCHMARKS.md, "MASQUE relay"), and a stream's writes may queue up to 1 MiB before
/// it stops reading its socket. What one connection can make its peer hold is bounded by the
/// connection window (8 MiB), whatever its number of streams.
enum RelayHTTP2Settings {
    static let streamWindow = 1 << 20
    static let connectionWindow = 8 << 20

    /// `extendedConnect`: the server's `SETTINGS_ENABLE_CONNECT_PROTOCOL = 1` (RFC 8441 §3);
    /// `maximumStreams`: its `SETTINGS_MAX_CONCURRENT_STREAMS` (nil: swift-nio-http2's 100).
    static func connection(extendedConnect: Bool, maximumStreams: Int? = nil) -> NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = nioDefaultSettings.filter { maximumStreams == nil || $0.parameter != .maxConcurrentStreams }
            + [HTTP2Setting(parameter: .initialWindowSize, value: streamWindow)]
        if let maximumStreams { configuration.initialSettings.append(HTTP2Setting(parameter: .maxConcurrentStreams, value: maximumStreams)) }
        if extendedConnect { configuration.initialSettings.append(HTTP2Setting(parameter: .enableConnectProtocol, value: 1)) }
        configuration.targetWindowSize = connectionWindow
        return configuration
    }

    static var stream: NIOHTTP2Handler.StreamConfiguration {
        var configuration = NIOHTTP2Handler.StreamConfiguration()
        configuration.targetWindowSize = streamWindow
        configuration.outboundBufferSizeHighWatermark = 1 << 20
        configuration.outboundBufferSizeLowWatermark = 256 << 10
        return configuration
    }
}
