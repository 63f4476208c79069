import NIOCore
import Testing
@testable import EncryptedDNS

/// The one-timer deadline queue of the DoH upstream: due requests come out in deadline order,
/// answered ones are dropped without being handed to the timer, and a request with a shorter
/// timeout than those before it still comes out in its turn.
@Suite("DoH: pending requests by deadline")
struct PendingDeadlinesTests {
    final class Request {
        let name: String
        var isDone = false
        init(_ name: String) { self.name = name }
    }

    static func at(_ milliseconds: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(milliseconds) * 1_000_000) }

    @Test("in deadline order, the earlier one put in its place; answered ones dropped at the front and never due")
    func order() {
        var queue = PendingDeadlines<Request>()
        let (a, b, c, d) = (Request("a"), Request("b"), Request("c"), Request("d"))
        queue.add(a, at: Self.at(1500))
        queue.add(b, at: Self.at(1600))
        queue.add(c, at: Self.at(1700))
        queue.add(d, at: Self.at(1550))  // a shorter timeout, started later
        let first = queue.first(where: { $0.isDone })
        #expect(first == Self.at(1500))
        a.isDone = true
        let second = queue.first(where: { $0.isDone })
        #expect(second == Self.at(1550), "the answered front is dropped")
        #expect(queue.count == 3)
        let dueFirst = queue.removeDue(before: Self.at(1599), where: { $0.isDone }).map(\.name)
        #expect(dueFirst == ["d"])
        c.isDone = true
        let dueLater = queue.removeDue(before: Self.at(2000), where: { $0.isDone }).map(\.name)
        #expect(dueLater == ["b"], "c was answered: not due")
        #expect(queue.count == 0)
        let none = queue.first(where: { $0.isDone })
        #expect(none == nil)
    }

    @Test("many requests in random order of completion: every one not done comes out once, when due, in order")
    func randomized() {
        var random = SystemRandomNumberGenerator()
        var queue = PendingDeadlines<Request>()
        var requests: [(Request, Int64)] = []
        for index in 0..<2000 {
            let deadline = Int64(index) + (Int64.random(in: 0..<10, using: &random) == 0 ? -Int64.random(in: 0..<50, using: &random) : 0) + 100
            let request = Request("\(index)")
            requests.append((request, deadline))
            queue.add(request, at: Self.at(deadline))
            if Bool.random(using: &random) { requests.randomElement(using: &random)!.0.isDone = true }
        }
        var out: [String] = []
        var now: Int64 = 0
        while now < 3000 {
            now += Int64.random(in: 1..<40, using: &random)
            let due = queue.removeDue(before: Self.at(now), where: { $0.isDone })
            for request in due {
                let deadline = requests[Int(request.name)!].1
                #expect(deadline <= now, "\(request.name) came out before its deadline")
                #expect(!request.isDone)
                request.isDone = true
                out.append(request.name)
            }
        }
        #expect(Set(out).count == out.count, "each once")
        let allEnded = requests.allSatisfy { $0.0.isDone }
        #expect(allEnded, "every request came out or was answered")
    }
}
