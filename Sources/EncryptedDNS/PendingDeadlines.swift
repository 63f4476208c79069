import NIOCore

/// Requests in the order of their deadlines, for one timer to serve them all: a deadline later
/// than every other (the usual case: one timeout for every query, taken as they come) is added
/// at the end, an earlier one put in its place. Requests done before their deadline are not
/// removed one by one: they are dropped as they reach the front, where the timer (and every
/// addition) looks. Used on one event loop only.
struct PendingDeadlines<Request: AnyObject> {
    private var entries = CircularBuffer<(deadline: NIODeadline, request: Request)>()

    /// How many are held, done ones at the back included.
    var count: Int { entries.count }

    /// Adds `request`, due at `deadline`.
    mutating func add(_ request: Request, at deadline: NIODeadline) {
        if let last = entries.last, last.deadline > deadline {
            // Earlier than the last one (another timeout): its place, found from the back.
            var index = entries.endIndex
            while index > entries.startIndex, entries[entries.index(before: index)].deadline > deadline { index = entries.index(before: index) }
            entries.insert((deadline, request), at: index)
        } else {
            entries.append((deadline, request))
        }
    }

    /// The first deadline of a request `isDone` does not rule out, dropping the done ones before it.
    mutating func first(where isDone: (Request) -> Bool) -> NIODeadline? {
        while let front = entries.first {
            guard isDone(front.request) else { return front.deadline }
            entries.removeFirst()
        }
        return nil
    }

    /// Takes out and returns the requests due before `now` that are not done; drops the done
    /// ones met on the way.
    mutating func removeDue(before now: NIODeadline, where isDone: (Request) -> Bool) -> [Request] {
        var due: [Request] = []
        while let front = entries.first, isDone(front.request) || front.deadline <= now {
            entries.removeFirst()
            if !isDone(front.request) { due.append(front.request) }
        }
        return due
    }
}
