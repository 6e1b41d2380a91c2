/// Items a sans-I/O machine hands its owner, in order: appended as they happen, taken one
/// at a time; once all are taken the storage is reused, so a machine that emits now and
/// then allocates only while it grows.
package struct DrainQueue<Element> {
    private var items: [Element] = []
    private var head = 0

    package init(capacity: Int = 0) { items.reserveCapacity(capacity) }

    package mutating func append(_ item: Element) { items.append(item) }

    /// The oldest item not taken yet, or nil.
    package mutating func next() -> Element? {
        guard head < items.count else {
            if head > 0 {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            return nil
        }
        defer { head += 1 }
        return items[head]
    }
}
