// swift-tools-version: 6.1
// NetExt: the Network Extension framework, for Linux.
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "NetExt",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "NetExt", targets: ["NetExt"]),
        .library(name: "NetExtCore", targets: ["NetExtCore"]),
        .library(name: "NetExtTesting", targets: ["NetExtTesting"]),
        // The reference providers, to depend on or start from: the packet tunnel provider (and
        // its client engine) and the content filter / URL filter providers.
        .library(name: "NetExtTunnel", targets: ["NetExtTunnel"]),
        .library(name: "NetExtFilters", targets: ["NetExtFilters"]),
        .library(name: "BloomFilter", targets: ["BloomFilter"]),
        .library(name: "HomomorphicEncryption", targets: ["HomomorphicEncryption"]),
        .library(name: "PrivateInformationRetrieval", targets: ["PrivateInformationRetrieval"]),
        .library(name: "ObliviousHTTP", targets: ["ObliviousHTTP"]),
        .library(name: "PrivacyPass", targets: ["PrivacyPass"]),
        .library(name: "NetExtHTTP", targets: ["NetExtHTTP"]),
        .executable(name: "netext", targets: ["netext"]),
        .executable(name: "netextd", targets: ["netextd"]),
        .executable(name: "netext-test-provider", targets: ["netext-test-provider"]),
        .executable(name: "netext-tunnel-provider", targets: ["netext-tunnel-provider"]),
        .executable(name: "netext-proxy-provider", targets: ["netext-proxy-provider"]),
        .executable(name: "netext-relay-provider", targets: ["netext-relay-provider"]),
        .executable(name: "netext-dns-proxy-provider", targets: ["netext-dns-proxy-provider"]),
        .executable(name: "netext-filter-provider", targets: ["netext-filter-provider"]),
        .executable(name: "netext-hotspot-helper", targets: ["netext-hotspot-helper"]),
        .executable(name: "netext-transferd", targets: ["netext-transferd"]),
        .executable(name: "netext-server", targets: ["netext-server"]),
        .executable(name: "netext-urlfilter-db", targets: ["netext-urlfilter-db"]),
        .executable(name: "netext-bench-bloom", targets: ["netext-bench-bloom"]),
        .executable(name: "netext-bench-connect", targets: ["netext-bench-connect"]),
        .executable(name: "netext-bench-relay", targets: ["netext-bench-relay"]),
        .executable(name: "netext-bench-he", targets: ["netext-bench-he"]),
        .executable(name: "netext-bench-pir", targets: ["netext-bench-pir"]),
        .executable(name: "netext-bench-urlfilter", targets: ["netext-bench-urlfilter"]),
        .executable(name: "netext-bench-http", targets: ["netext-bench-http"]),
        .executable(name: "netext-example-manager", targets: ["netext-example-manager"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The HTTP roles' server (HummingbirdCore, its TLS and HTTP/2 channels); no traits: the
        // swift-configuration reader and full-Foundation extras are not used.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        // DER reading of servers' certificates for App Transport Security (NetExtHTTP).
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Only a command plugin (`swift package generate-documentation`, scripts/docs): no code
        // of it is linked into any NetExt product.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Pure models: addresses, configurations, on-demand rules, profiles, errors.
        .target(name: "NetExtCore", swiftSettings: strict),
        // The content filter's reading of packets: IP/TCP/UDP headers, TLS ClientHello, HTTP
        // request heads, QUIC crypto frames, DNS messages; the flow table; the steering model.
        .target(name: "FlowInspection", dependencies: ["NetExtCore"], swiftSettings: strict),
        // The personal VPN's talk with strongSwan's charon: the VICI codec and connection, and
        // the IKEv2 client plan (what to load for a personal VPN configuration).
        .target(name: "IKEv2VICI", dependencies: ["NetExtCore", "NetExtLinux"], swiftSettings: strict),
        // Reads the server name from a QUIC client's Initial packets (RFC 9001 initial keys).
        .target(
            name: "QUICInitial",
            dependencies: ["NetExtCore", "FlowInspection", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
            swiftSettings: strict),
        // The control protocol: versioned messages and framing, no sockets.
        .target(name: "NetExtIPC", dependencies: ["NetExtCore"], swiftSettings: strict),
        // Our encrypted UDP tunnel protocol without I/O: handshake, keys, framing, replay window.
        .target(
            name: "TunnelProtocol",
            dependencies: ["NetExtCore", "CTunnelCrypto", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // In-place ChaCha20-Poly1305 for the tunnel's data path, on swift-crypto's BoringSSL.
        .target(name: "CTunnelCrypto"),
        // The reference packet tunnel: client engine and provider, and the tunnel server role.
        .target(
            name: "NetExtTunnel",
            dependencies: [
                "NetExt", "NetExtCore", "NetExtLinux", "TunnelProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict),
        // The reference content filter providers (school filter).
        .target(name: "NetExtFilters", dependencies: ["NetExt", "HTTPFetching", "NetExtHTTP"], swiftSettings: strict),
        // The reference app proxy: SOCKS 5 and HTTP CONNECT handshakes and the forwarding provider.
        .target(name: "NetExtProxies", dependencies: ["NetExt", "NetExtCore", "NetExtLinux"], swiftSettings: strict),
        // The URL filter's Bloom prefilter, bit-compatible with Apple's NEURLFilterPrefilter.
        .target(name: "BloomFilter", swiftSettings: strict),
        // BFV homomorphic encryption over RNS with NTT arithmetic (the URL filter's PIR).
        .target(
            name: "HomomorphicEncryption",
            dependencies: [
                "CHomomorphicKernels", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // NTT butterflies and multiply-accumulate loops, compiled per x86 level with runtime dispatch.
        .target(name: "CHomomorphicKernels", cSettings: [.unsafeFlags(["-O3"])]),
        // Index and keyword PIR (MulPIR over BFV, cuckoo-hashed keywords, shards), generic over HeScheme.
        .target(
            name: "PrivateInformationRetrieval",
            dependencies: ["HomomorphicEncryption", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict),
        // The PIR wire format: generated protobuf code (Protos/, scripts/generate-protos) and
        // conversions to the HE/PIR types; the math modules never import it.
        .target(
            name: "PIRProtobuf",
            dependencies: [
                "HomomorphicEncryption", "PrivateInformationRetrieval",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // The HTTP client every NetExt part shares (AsyncHTTPClient: pooled, HTTP/2 by ALPN,
        // TLS against the system's or a given CA, failures as sentences): the servers' upstream
        // hops, netextd's URL filter, the reference filter providers.
        .target(
            name: "HTTPFetching",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The user's transfer service for background sessions (netext-transferd): tasks in
        // SQLite, carried out with NetExtHTTP, resumed after restarts and network changes.
        .target(
            name: "BackgroundTransfers",
            dependencies: [
                "NetExtHTTP", "NetExtLinux", "NetExtTransport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // The HTTP client for apps: a URLSession-shaped API with App Transport Security, HTTP/2 by
        // ALPN with one connection per origin (SwiftNIO directly: AsyncHTTPClient offers no
        // hook to inspect the server's certificate, which ATS's key, signature and pin rules need).
        .target(
            name: "NetExtHTTP",
            dependencies: [
                "NetExt", "NetExtCore", "NetExtIPC", "NetExtProxies", "NetExtTransport", "NetExtLinux",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict),
        // netextd's resolver's encrypted upstreams: DNS over TLS (RFC 7858) and DNS over HTTPS
        // (RFC 8484, HTTP/2), each one pipelined connection to a server address of the
        // configuration's (no bootstrap look-up).
        .target(
            name: "EncryptedDNS",
            dependencies: [
                "NetExtCore", "HTTPFetching", "ObliviousHTTP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: strict),
        // The HTTP server every netext-server role runs (Hummingbird 2: HTTP/1.1; with TLS,
        // HTTP/2 by ALPN), with NetExt's limits, built-in endpoints and metrics; re-exports
        // HTTPFetching (its upstream client).
        .target(
            name: "HTTPServing",
            dependencies: [
                "NetExtCore", "HTTPFetching",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // The PIR service: processed database files, use cases, evaluation-key store, request
        // handling and its HTTP server (netext-server pir).
        .target(
            name: "PIRService",
            dependencies: [
                "HomomorphicEncryption", "PrivateInformationRetrieval", "PIRProtobuf", "HTTPServing", "NetExtCore", "NetExtLinux",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict),
        // The URL filter's client side: keys (normalization, the 24-key expansion, Punycode),
        // lookups, the PIR HTTP client and its transports. Links no server code.
        .target(
            name: "URLFilter",
            dependencies: [
                "BloomFilter", "HomomorphicEncryption", "PrivateInformationRetrieval", "PIRProtobuf", "NetExtCore", "NetExtLinux",
                "ObliviousHTTP", "PrivacyPass", "HTTPServing",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strict),
        // The URL filter database builder (prefilter + processed PIR shards), for
        // netext-urlfilter-db and tests; kept out of URLFilter so clients do not link the PIR server.
        .target(
            name: "URLFilterDatabase",
            dependencies: ["URLFilter", "BloomFilter", "HomomorphicEncryption", "PrivateInformationRetrieval", "PIRService", "NetExtCore", "NetExtLinux"],
            swiftSettings: strict),
        // Oblivious HTTP (RFC 9458) and known-length Binary HTTP (RFC 9292), on swift-crypto's HPKE.
        .target(name: "ObliviousHTTP", dependencies: ["VariableLengthIntegers", .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        // RFC 9000 §16 variable-length integers, shared by Binary HTTP and HTTP capsules.
        .target(name: "VariableLengthIntegers", swiftSettings: strict),
        // HTTP capsules without I/O (RFC 9297), the payloads of UDP and IP proxying in HTTP
        // (RFC 9298, RFC 9484) and the connect-udp target path: the wire of the MASQUE relays.
        .target(name: "HTTPCapsules", dependencies: ["NetExtCore", "VariableLengthIntegers"], swiftSettings: strict),
        // `netext-server relay`: MASQUE over HTTP/2 with TLS (CONNECT, connect-udp).
        .target(
            name: "MASQUERelay",
            dependencies: [
                "HTTPCapsules", "HTTPFetching", "HTTPServing", "NetExtCore", "PrivacyPass", "VariableLengthIntegers",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: strict),
        // Privacy Pass (RFC 9577 structures, RFC 9578 type 0x0002 blind-RSA issuance) on swift-crypto.
        .target(
            name: "PrivacyPass",
            dependencies: [.product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")],
            swiftSettings: strict),
        // The servers around the URL filter's privacy: the Privacy Pass issuer and origin-side
        // token verification (spent tokens in SQLite), the Oblivious HTTP gateway and relay.
        .target(
            name: "PrivacyServices",
            dependencies: [
                "PrivacyPass", "ObliviousHTTP", "HTTPServing", "NetExtCore", "NetExtLinux",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict),
        // Every Linux-specific system call, behind one name.
        .target(name: "CNetExtLinux"),
        .target(name: "NetExtLinux", dependencies: ["NetExtCore", "CNetExtLinux"], swiftSettings: strict),
        // The control transport: control-protocol frames over a Unix socket or an inherited
        // socketpair, on SwiftNIO (netextd's server side, the library's client side).
        .target(
            name: "NetExtTransport",
            dependencies: [
                "NetExtCore", "NetExtIPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // The public API for apps and providers: the only module they import.
        .target(
            name: "NetExt",
            dependencies: [
                "NetExtCore", "NetExtIPC", "NetExtLinux", "NetExtTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // netextd's logic: store, sessions, launcher, control server.
        .target(
            name: "NetExtDaemon",
            dependencies: [
                "NetExtCore", "NetExtIPC", "NetExtLinux", "NetExtTransport", "URLFilter", "PrivacyPass", "BloomFilter", "QUICInitial", "FlowInspection", "IKEv2VICI", "EncryptedDNS", "HTTPFetching",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                // PKCS#12 identities from profiles (ProfileIdentityPEM).
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict),
        // Shipped fakes for testing providers and netextd's logic without root: the in-memory
        // packet flow pair, the recording network applier (docs/testing.md).
        .target(
            name: "NetExtTesting", dependencies: ["NetExt", "NetExtDaemon", "NetExtCore", "NetExtIPC", "NetExtLinux", "FlowInspection", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict),
        // One commands target per executable, so that each binary links only what it drives:
        // the unprivileged `netext` CLI links neither GRDB nor the daemon nor any server.
        .target(
            name: "NetExtCLI",
            dependencies: [
                "NetExt", "NetExtCore", "NetExtIPC", "NetExtHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        .target(
            name: "NetExtDaemonCommand",
            dependencies: [
                "NetExtDaemon", "NetExtCore", "CommandLogging", "DaemonLifecycle", "ServiceMetrics", "HTTPServing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "NetExtServerCommands",
            dependencies: [
                "NetExtCore", "NetExtLinux", "NetExtTunnel", "TunnelProtocol", "PIRService", "HTTPServing", "PrivacyServices", "PrivacyPass",
                "CommandLogging", "DaemonLifecycle", "ServiceMetrics", "EncryptedDNS", "MASQUERelay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        .target(
            name: "URLFilterDatabaseCommand",
            dependencies: [
                "URLFilter", "URLFilterDatabase", "BloomFilter", "NetExtCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        // How netextd and every server role live as a system service: ServiceLifecycle's service
        // group (SIGTERM/SIGINT: graceful shutdown), SIGHUP reloads, systemd readiness.
        .target(
            name: "DaemonLifecycle",
            dependencies: [
                "NetExtLinux",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Prometheus exposition of the swift-metrics every server role and netextd record: the
        // described factory (HELP text for every family) and the loopback-only metrics listener.
        .target(
            name: "ServiceMetrics",
            dependencies: [
                "NetExtCore", "HTTPServing",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict),
        // Standard-error logging for the daemon and the servers.
        .target(
            name: "CommandLogging",
            dependencies: ["NetExtCore", .product(name: "Logging", package: "swift-log"), .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict),
        .executableTarget(name: "netext", dependencies: ["NetExtCLI"]),
        .executableTarget(name: "netextd", dependencies: ["NetExtDaemonCommand"]),
        .executableTarget(name: "netext-test-provider", dependencies: ["NetExt"]),
        .executableTarget(name: "netext-tunnel-provider", dependencies: ["NetExt", "NetExtTunnel"]),
        .executableTarget(name: "netext-server", dependencies: ["NetExtServerCommands"]),
        .executableTarget(name: "netext-urlfilter-db", dependencies: ["URLFilterDatabaseCommand"]),
        .executableTarget(name: "netext-filter-provider", dependencies: ["NetExt", "NetExtFilters"]),
        // The reference hotspot helper: a captive portal's form login (docs/captive-portals.md).
        .executableTarget(name: "netext-hotspot-helper", dependencies: ["NetExt", "NetExtFilters"]),
        .executableTarget(name: "netext-transferd", dependencies: ["BackgroundTransfers", "NetExt"]),
        .executableTarget(name: "netext-proxy-provider", dependencies: ["NetExt", "NetExtProxies"]),
        // The built-in relay client: a transparent proxy carrying flows through MASQUE relays.
        .target(
            name: "RelayProvider",
            dependencies: ["HTTPCapsules", "HTTPFetching", "MASQUERelay", "NetExt", "NetExtCore", .product(name: "NIOSSL", package: "swift-nio-ssl")],
            swiftSettings: strict),
        .executableTarget(name: "netext-relay-provider", dependencies: ["NetExt", "RelayProvider"]),
        // The reference DNS proxy: every program's DNS answered over its own DoH connection.
        .executableTarget(
            name: "netext-dns-proxy-provider",
            dependencies: [
                "NetExt", "NetExtCore", "EncryptedDNS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict),
        // NetExtHTTP against AsyncHTTPClient on the same nginx (scripts/bench-http).
        .executableTarget(
            name: "netext-bench-http",
            dependencies: [
                "NetExtHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Benchmarks/HTTPClient"),
        // Bloom prefilter lookup benchmark (scripts/bench-bloom).
        .executableTarget(name: "netext-bench-bloom", dependencies: ["BloomFilter"], path: "Benchmarks/BloomLookups"),
        // BFV primitive timings at the PIR parameters (scripts/bench-pir).
        .executableTarget(name: "netext-bench-he", dependencies: ["HomomorphicEncryption"], path: "Benchmarks/HomomorphicEncryption"),
        // Keyword-PIR server/client timings at the URL filter's parameters (scripts/bench-pir).
        .executableTarget(
            name: "netext-bench-pir", dependencies: ["HomomorphicEncryption", "PrivateInformationRetrieval"],
            path: "Benchmarks/PIR"),
        // URL filter II: verdict latency, the private path, issuer and gateway rates (scripts/bench-urlfilter).
        .executableTarget(
            name: "netext-bench-urlfilter",
            dependencies: [
                "URLFilter", "URLFilterDatabase", "PrivacyServices", "PrivacyPass", "ObliviousHTTP", "HTTPServing", "PIRService", "BloomFilter",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/URLFilter"),
        // TCP connection-rate tool for the content filter benchmark (scripts/bench-filter).
        .executableTarget(name: "netext-bench-connect", path: "Benchmarks/ConnectRate"),
        // The MASQUE relay's new-flow time and bulk throughput against `netext-server relay` (scripts/bench-relay).
        .executableTarget(
            name: "netext-bench-relay", dependencies: ["MASQUERelay", .product(name: "NIOSSL", package: "swift-nio-ssl")], path: "Benchmarks/Relay"),
        // The README's manager example, built (and run by the integration tests) so it stays true.
        .executableTarget(name: "netext-example-manager", dependencies: ["NetExt"], path: "examples/manager"),
        // The example package's filter (examples/provider-package, which depends on this package's
        // products), compiled here too so that CI keeps it building and tests it.
        .target(
            name: "ExamplePortBlockingFilter", dependencies: ["NetExt", "NetExtFilters"],
            path: "examples/provider-package/Sources/PortBlockingFilter"),
        .testTarget(name: "ExampleProviderTests", dependencies: ["ExamplePortBlockingFilter", "NetExt", "NetExtFilters"]),
        .testTarget(name: "NetExtCoreTests", dependencies: ["NetExtCore", "NetExtTestSupport"]),
        .testTarget(name: "IKEv2VICITests", dependencies: ["IKEv2VICI", "NetExtCore", "NetExtTestSupport"]),
        .testTarget(name: "FlowInspectionTests", dependencies: ["FlowInspection", "NetExtCore", "NetExtTestSupport"]),
        .testTarget(name: "QUICInitialTests", dependencies: ["QUICInitial", "FlowInspection", "NetExtCore", "NetExtTestSupport"]),
        .testTarget(name: "TunnelProtocolTests", dependencies: ["TunnelProtocol", "NetExtCore", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "BloomFilterTests", dependencies: ["BloomFilter"]),
        .testTarget(name: "HomomorphicEncryptionTests", dependencies: ["HomomorphicEncryption"]),
        .testTarget(
            name: "URLFilterTests",
            dependencies: [
                "URLFilter", "URLFilterDatabase", "PIRService", "PIRProtobuf", "PrivateInformationRetrieval", "HomomorphicEncryption", "BloomFilter",
                "PrivacyServices", "HTTPServing", "NetExtTestSupport", "ServiceMetrics",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]),
        // Shared by the test targets: the RFC test-vector loader.
        .target(name: "NetExtTestSupport", path: "Tests/Support"),
        .testTarget(
            name: "PrivacyPassTests",
            dependencies: ["PrivacyPass", "NetExtTestSupport", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto")]),
        .testTarget(
            name: "PrivacyServicesTests",
            dependencies: [
                "NetExtFilters", "NetExt",
                "PrivacyServices", "PrivacyPass", "ObliviousHTTP", "HTTPServing", "URLFilter", "NetExtTestSupport", "ServiceMetrics", "NetExtCore",
                "MASQUERelay",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .testTarget(name: "ObliviousHTTPTests", dependencies: ["ObliviousHTTP", "VariableLengthIntegers", "NetExtTestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "HTTPCapsulesTests", dependencies: ["HTTPCapsules", "NetExtCore", "NetExtTestSupport", "VariableLengthIntegers"]),
        .testTarget(
            name: "MASQUERelayTests",
            dependencies: [
                "MASQUERelay", "RelayProvider", "NetExt", "NetExtIPC", "NetExtLinux", "HTTPServing", "NetExtCore", "NetExtTestSupport",
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]),
        .testTarget(name: "PrivateInformationRetrievalTests", dependencies: ["PrivateInformationRetrieval", "HomomorphicEncryption"]),
        .testTarget(name: "NetExtLinuxTests", dependencies: ["NetExtLinux", "NetExtCore", "NetExtTestSupport"]),
        .testTarget(
            name: "CommandLoggingTests",
            dependencies: ["CommandLogging", .product(name: "Logging", package: "swift-log"), .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .testTarget(
            name: "EncryptedDNSTests",
            dependencies: [
                "EncryptedDNS", "NetExtCore", "NetExtTestSupport", "ObliviousHTTP", "PrivacyServices", "HTTPServing",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ]),
        .testTarget(
            name: "NetExtHTTPTests",
            dependencies: [
                "NetExtHTTP", "BackgroundTransfers", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"), .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(name: "NetExtIPCTests", dependencies: ["NetExtIPC", "NetExtCore", "NetExtTestSupport"]),
        .testTarget(name: "NetExtProxiesTests", dependencies: ["NetExtProxies", "NetExt", "NetExtIPC", "NetExtCore", "NetExtLinux"]),
        .testTarget(
            name: "NetExtDaemonTests",
            dependencies: [
                "NetExtDaemon", "NetExtCore", "NetExtIPC", "NetExtLinux", "NetExtTesting", "ServiceMetrics", "NetExtTestSupport", "EncryptedDNS",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "NetExtTestingTests",
            dependencies: [
                "NetExtTesting", "NetExt", "NetExtCore", "NetExtDaemon", "NetExtLinux", "NetExtTunnel", "NetExtFilters", "TunnelProtocol", "NetExtTransport", "NetExtIPC",
                "NetExtTestSupport", "ServiceMetrics", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]),
        // Starts the real binaries (netextd, netext, the test provider); needs root.
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["NetExt", "NetExtCore", "NetExtIPC", "NetExtDaemon", "NetExtLinux", "NetExtTestSupport", .product(name: "GRDB", package: "GRDB.swift")]),
    ]
)
