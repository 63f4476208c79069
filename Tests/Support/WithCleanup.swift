/// Runs `body` with `resource`, then `cleanup`, whether `body` threw or not: the async
/// counterpart of `defer`, which cannot await (a `defer { Task { … } }` may never run before the
/// test process exits).
public func withCleanup<Resource, Result>(
    _ resource: Resource, cleanup: (Resource) async -> Void, _ body: (Resource) async throws -> Result
) async throws -> Result {
    let result: Result
    do { result = try await body(resource) } catch {
        await cleanup(resource)
        throw error
    }
    await cleanup(resource)
    return result
}
