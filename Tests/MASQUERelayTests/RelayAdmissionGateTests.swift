import Testing

@testable import MASQUERelay

/// The client's gate that keeps a Privacy Pass token to one request until the relay admitted
/// the connection (the relay itself: PrivacyServicesTests' RelayPrivacyPassTests).
@Suite("The relay client's Privacy Pass admission gate")
struct RelayAdmissionGateTests {
    static let token = [(name: "Proxy-Authorization", value: "PrivateToken token=\"AAEC\"")]

    @Test("which fields are single-use credentials: PrivateToken under either name and any case; Bearer and other fields are not")
    func credentials() {
        #expect(RelayAdmissionGate(fields: Self.token).isNeeded)
        #expect(RelayAdmissionGate(fields: [(name: "authorization", value: "privatetoken token=abc")]).isNeeded)
        #expect(!RelayAdmissionGate(fields: [(name: "Proxy-Authorization", value: "Bearer abc")]).isNeeded)
        #expect(!RelayAdmissionGate(fields: [(name: "X-PrivateToken", value: "PrivateToken token=abc")]).isNeeded)
        let fields = Self.token + [(name: "x-lab", value: "1")]
        #expect(RelayAdmissionGate.fields(fields, for: .admitted).map(\.name) == ["x-lab"])
        #expect(RelayAdmissionGate.fields(fields, for: .presenting).count == 2)
    }

    @Test("without a token every request goes at once with every field")
    func unneeded() async throws {
        let gate = RelayAdmissionGate(fields: [(name: "Proxy-Authorization", value: "Bearer abc")])
        #expect(try await gate.begin() == .unneeded)
        #expect(try await gate.begin() == .unneeded)
    }

    /// Starts `count` requests that wait on `gate` behind a presenting one; returns their turns
    /// (or errors) once `settle` ran.
    static func waiters(_ count: Int, on gate: RelayAdmissionGate, settle: () -> Void) async -> [Result<RelayAdmissionGate.Turn, any Error>] {
        await withTaskGroup(of: Result<RelayAdmissionGate.Turn, any Error>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do { return .success(try await gate.begin()) } catch { return .failure(error) }
                }
            }
            // Let the waiters reach the gate (bounded: 200 × 5 ms).
            for _ in 0..<200 { try? await Task.sleep(for: .milliseconds(5)) }
            settle()
            var results: [Result<RelayAdmissionGate.Turn, any Error>] = []
            for await result in group { results.append(result) }
            return results
        }
    }

    @Test("the first presents; those opened meanwhile wait; an answer admits them all, and later ones, without the token")
    func admitted() async throws {
        let gate = RelayAdmissionGate(fields: Self.token)
        #expect(try await gate.begin() == .presenting)
        let turns = await Self.waiters(3, on: gate) { gate.settle(.presenting, with: .success(())) }
        #expect(turns.map { try? $0.get() } == [.admitted, .admitted, .admitted])
        #expect(try await gate.begin() == .admitted)
        // A refusal that is not about the credential (403: the target) admits too.
        let other = RelayAdmissionGate(fields: Self.token)
        #expect(try await other.begin() == .presenting)
        other.settle(.presenting, with: .failure(RelayClient.Failure(description: "403", status: 403)))
        #expect(try await other.begin() == .admitted)
    }

    @Test("a 407 refuses the waiting requests and later ones with its failure")
    func refused() async throws {
        let gate = RelayAdmissionGate(fields: Self.token)
        #expect(try await gate.begin() == .presenting)
        let turns = await Self.waiters(2, on: gate) {
            gate.settle(.presenting, with: .failure(RelayClient.Failure(description: "the relay refused with 407", status: 407)))
        }
        for turn in turns {
            guard case .failure(let error) = turn else { Issue.record("a waiter went on: \(turn)"); continue }
            #expect("\(error)".contains("407"))
        }
        await #expect(throws: RelayClient.Failure.self) { try await gate.begin() }
    }

    @Test("a presenting request that ended unanswered hands the token to one waiter; the others wait on for its answer")
    func unanswered() async throws {
        let gate = RelayAdmissionGate(fields: Self.token)
        #expect(try await gate.begin() == .presenting)
        struct Reset: Error {}
        let turns = await Self.waiters(3, on: gate) {
            gate.settle(.presenting, with: .failure(Reset()))
            // The new presenter's answer (after a moment) admits the other two.
            Task {
                try? await Task.sleep(for: .milliseconds(50))
                gate.settle(.presenting, with: .success(()))
            }
        }
        let values = turns.compactMap { try? $0.get() }
        #expect(values.filter { $0 == .presenting }.count == 1)
        #expect(values.filter { $0 == .admitted }.count == 2)
        // Settling a turn that did not present changes nothing.
        gate.settle(.admitted, with: .failure(Reset()))
        #expect(try await gate.begin() == .admitted)
    }
}
