/// Entries named by IDs: slots in an array with a generation each, so the ID of a removed
/// entry never finds the slot's next tenant. A lookup is an index and a comparison, no
/// hashing, which is what the per-packet path can afford for every subscriber.
///
/// The router's transports, producers and consumers live in three of these and name one
/// another only by ID: removing an entry cannot leave a dangling reference behind, only
/// an ID that no longer finds anything.
struct Table<Element> {
    struct ID: Hashable, Sendable, CustomStringConvertible {
        fileprivate let slot: UInt32
        fileprivate let generation: UInt32

        var description: String { "\(slot).\(generation)" }
    }

    private var slots: [Element?] = []
    private var generations: [UInt32] = []
    private var vacant: [UInt32] = []
    private(set) var count = 0

    /// Stores `element` in a free slot (or a new one) and names it.
    mutating func insert(_ element: Element) -> ID {
        count += 1
        if let slot = vacant.popLast() {
            slots[Int(slot)] = element
            return ID(slot: slot, generation: generations[Int(slot)])
        }
        slots.append(element)
        generations.append(0)
        return ID(slot: UInt32(slots.count - 1), generation: 0)
    }

    /// Takes an entry out; its ID finds nothing from now on.
    @discardableResult
    mutating func remove(_ id: ID) -> Element? {
        guard contains(id) else { return nil }
        let element = slots[Int(id.slot)]
        slots[Int(id.slot)] = nil
        generations[Int(id.slot)] &+= 1
        vacant.append(id.slot)
        count -= 1
        return element
    }

    func contains(_ id: ID) -> Bool {
        Int(id.slot) < slots.count && generations[Int(id.slot)] == id.generation && slots[Int(id.slot)] != nil
    }

    /// The entry `id` names, or nil once it was removed. Changes go to the entry in place
    /// (a consumer's rewriter is updated per packet without copying it); assigning nil
    /// removes it as `remove` does.
    subscript(id: ID) -> Element? {
        _read {
            if contains(id) { yield slots[Int(id.slot)] } else { yield nil }
        }
        _modify {
            if contains(id) {
                yield &slots[Int(id.slot)]
                if slots[Int(id.slot)] == nil {
                    generations[Int(id.slot)] &+= 1
                    vacant.append(id.slot)
                    count -= 1
                }
            } else {
                var none: Element?
                yield &none
            }
        }
    }

    /// Calls `body` with every entry's ID and the entry, in slot order (a plain loop: the
    /// forwarding thread walks the transports after every datagram).
    func forEach(_ body: (ID, Element) throws -> Void) rethrows {
        for index in slots.indices {
            if let element = slots[index] { try body(ID(slot: UInt32(index), generation: generations[index]), element) }
        }
    }

    /// Every entry's ID, in slot order: to change entries while going through them.
    var ids: [ID] {
        var ids: [ID] = []
        ids.reserveCapacity(count)
        forEach { id, _ in ids.append(id) }
        return ids
    }
}
