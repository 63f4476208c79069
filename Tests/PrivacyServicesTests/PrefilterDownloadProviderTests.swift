import Foundation
import HTTPServing
import NetExt
import NetExtFilters
import NetExtTestSupport
import Synchronization
import Testing

/// The reference URL filter control provider (`netext-filter-provider url-prefilter`) fetching
/// a prefilter from a real HTTPS server on loopback through AsyncHTTPClient: the private CA
/// given by `--ca-file` is what it trusts, a conditional fetch of an unchanged prefilter is
/// nil, and what goes wrong is a sentence naming the URL or key.
@Suite("The prefilter download provider")
struct PrefilterDownloadProviderTests {
    /// A CDN directory: `prefilter.bin` (with Last-Modified, answering 304 to a matching
    /// If-Modified-Since) and `prefilter.json`.
    final class PrefilterDirectory: HTTPResponder, Sendable {
        static let lastModified = "Tue, 24 Nov 2026 10:00:00 GMT"
        let bits: [UInt8]
        let json: Mutex<String>
        let seen = Mutex<[(path: String, ifModifiedSince: String?)]>([])

        init(bits: [UInt8], json: String) {
            self.bits = bits
            self.json = Mutex(json)
        }

        func bodyLimit(method: String, path: String) -> Int { 0 }
        func endpointLabel(path: String) -> String { path }
        func respond(to request: HTTPServerRequest) async -> HTTPServerResponse {
            seen.withLock { $0.append((request.path, request.header("If-Modified-Since"))) }
            switch request.path {
            case "/files/prefilter.bin":
                if request.header("If-Modified-Since") == Self.lastModified { return HTTPServerResponse(status: 304) }
                return HTTPServerResponse(contentType: "application/octet-stream", body: bits, headers: [("Last-Modified", Self.lastModified)])
            case "/moved/prefilter.bin":
                return HTTPServerResponse(status: 301, headers: [("Location", "https://cdn.example/files/prefilter.bin")])
            case "/files/prefilter.json":
                return HTTPServerResponse(contentType: "application/json", body: Array(json.withLock { $0 }.utf8))
            default:
                return .text(404, "not found")
            }
        }
    }

    static let parameters = #"{"bitCount": 64, "hashCount": 3, "murmurSeed": 7}"#

    @Test func fetchesOverTLSFromTheGivenCAAndAnUnchangedPrefilterIsNil() async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            let directory = PrefilterDirectory(bits: [0xA5, 1, 2, 3, 4, 5, 6, 7], json: Self.parameters)
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(directory, tls: tls).use { served in
                let provider = try PrefilterDownloadProvider(arguments: ["--from", served.base + "/files/", "--ca-file", certificates.caFile])
                let first = try #require(try await provider.fetchPrefilter())
                #expect(first.data == Data([0xA5, 1, 2, 3, 4, 5, 6, 7]))
                #expect(first.bitCount == 64 && first.hashCount == 3 && first.murmurSeed == 7)
                // The second fetch is conditional and the server says nothing changed.
                #expect(try await provider.fetchPrefilter() == nil)
                let seen = directory.seen.withLock { $0 }
                #expect(seen.map(\.path) == ["/files/prefilter.bin", "/files/prefilter.json", "/files/prefilter.bin"])
                #expect(seen.last?.ifModifiedSince == PrefilterDirectory.lastModified)
            }
        }
    }

    @Test func aServerNotSignedByTheGivenCAIsRefusedWithASentence() async throws {
        try await withCleanup(try await TestCertificates.make(), cleanup: { $0.remove() }) { certificates in
            let directory = PrefilterDirectory(bits: [1], json: Self.parameters)
            let tls = try ServerTLS(certificateFile: certificates.certificateFile, keyFile: certificates.keyFile)
            try await Served.start(directory, tls: tls).use { served in
                let provider = try PrefilterDownloadProvider(arguments: ["--from", served.base + "/files/", "--ca-file", certificates.otherCAFile])
                let error = await #expect(throws: NetExtError.self) { _ = try await provider.fetchPrefilter() }
                #expect(error?.message.contains("/files/prefilter.bin") == true, "\(error?.message ?? "-")")
                #expect(error?.message.contains("not signed by a trusted authority") == true, "\(error?.message ?? "-")")
                #expect(directory.seen.withLock { $0.isEmpty })
            }
        }
    }

    @Test func aMalformedParameterFileNamesTheKeyAndAMissingOrMovedFileItsStatus() async throws {
        let directory = PrefilterDirectory(bits: [1, 2], json: #"{"bitCount": 64, "hashCount": "three", "murmurSeed": 7}"#)
        try await Served.start(directory).use { served in
            let provider = try PrefilterDownloadProvider(arguments: ["--from", served.base + "/files/"])
            let error = await #expect(throws: NetExtError.self) { _ = try await provider.fetchPrefilter() }
            #expect(error?.message.hasPrefix("prefilter.json: ") == true && error?.message.contains("hashCount") == true, "\(error?.message ?? "-")")
            let missing = try PrefilterDownloadProvider(arguments: ["--from", served.base + "/elsewhere/"])
            let notFound = await #expect(throws: NetExtError.self) { _ = try await missing.fetchPrefilter() }
            #expect(notFound?.message == "\(served.base)/elsewhere/prefilter.bin: HTTP 404")
            let moved = try PrefilterDownloadProvider(arguments: ["--from", served.base + "/moved/"])
            let redirect = await #expect(throws: NetExtError.self) { _ = try await moved.fetchPrefilter() }
            #expect(redirect?.message == "\(served.base)/moved/prefilter.bin: HTTP 301 (redirects are not followed; the server points to https://cdn.example/files/prefilter.bin)")
        }
    }

    @Test("arguments are checked before any fetch", arguments: [
        (["--from", "ftp://cdn.example/"], "--from http(s)://HOST/PATH"),
        (["--ca-file", "/nonexistent/ca.pem"], "--from http(s)://HOST/PATH"),
        (["--from", "https://cdn.example/", "--ca-file", "/nonexistent/ca.pem"], "--ca-file: cannot read the CA file /nonexistent/ca.pem"),
    ])
    func refusesBadArguments(arguments: [String], expected: String) {
        let error = #expect(throws: NetExtError.self) { _ = try PrefilterDownloadProvider(arguments: arguments) }
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "-")")
    }
}
