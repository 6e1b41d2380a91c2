import MediaEngine

/// Packets waiting for their delivery time: a binary min-heap keyed by time.
///
/// Equal times come out first in, first out (an insertion counter breaks ties), so a link
/// without jitter never reorders what it was given. Insert and pop are O(log n) and reuse
/// the heap's storage. Not thread-safe.
struct DeliveryHeap<Element> {
    private struct Entry {
        var due: Duration
        var order: UInt64
        var element: Element

        func precedes(_ other: Entry) -> Bool {
            due < other.due || (due == other.due && order < other.order)
        }
    }

    private var entries: [Entry] = []
    private var insertions: UInt64 = 0

    init(reservingCapacity capacity: Int = 0) {
        entries.reserveCapacity(capacity)
    }

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// The earliest delivery time waiting, if any.
    var nextDue: Duration? { entries.first?.due }

    /// Adds `element`, due at `due`.
    mutating func insert(_ element: Element, due: Duration) {
        entries.append(Entry(due: due, order: insertions, element: element))
        insertions &+= 1
        siftUp(from: entries.count - 1)
    }

    /// Removes and returns the earliest element if it is due at or before `now`.
    mutating func popDue(now: Duration) -> (element: Element, due: Duration)? {
        guard let first = entries.first, first.due <= now else { return nil }
        return popFirst()
    }

    /// Removes and returns the earliest element, whatever its time.
    mutating func popFirst() -> (element: Element, due: Duration)? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let last = entries.removeLast()
        if !entries.isEmpty { siftDown(from: 0) }
        return (last.element, last.due)
    }

    private mutating func siftUp(from index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { return }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            let right = left + 1
            let first = right < entries.count && entries[right].precedes(entries[left]) ? right : left
            guard entries[first].precedes(entries[parent]) else { return }
            entries.swapAt(first, parent)
            parent = first
        }
    }
}
