import Foundation
import Testing

/// The homomorphic-encryption kernels as the compiler emits them, at every optimization level,
/// run on secret-marked inputs under Valgrind's memcheck (scripts/check-constant-time).
@Suite("Constant time: the C kernels emitted at -O0 to -O3")
struct ConstantTimeTests {
    @Test("no branch or memory address depends on secret data")
    func kernels() async throws {
        let result = try await run("/bin/bash", [repositoryRoot + "/scripts/check-constant-time"], timeout: 300)
        #expect(result.status == 0, "\(result)")
        let passed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("PASS ") }
        #expect(passed.count == 4, "\(result.stdout)")
    }
}
