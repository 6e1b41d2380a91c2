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
    /// Whether each slot holds an entry: asked per lookup, where reading the slot itself
    /// would copy its entry.
    private var occupied: [Bool] = []
    private var vacant: [UInt32] = []
    private(set) var count = 0

    /// Stores `element` in a free slot (or a new one) and names it.
    mutating func insert(_ element: Element) -> ID {
        count += 1
        if let slot = vacant.popLast() {
            slots[Int(slot)] = element
            occupied[Int(slot)] = true
            return ID(slot: slot, generation: generations[Int(slot)])
        }
        slots.append(element)
        generations.append(0)
        occupied.append(true)
        return ID(slot: UInt32(slots.count - 1), generation: 0)
    }

    /// Takes an entry out; its ID finds nothing from now on.
    @discardableResult
    mutating func remove(_ id: ID) -> Element? {
        guard contains(id) else { return nil }
        let element = slots[Int(id.slot)]
        slots[Int(id.slot)] = nil
        occupied[Int(id.slot)] = false
        generations[Int(id.slot)] &+= 1
        vacant.append(id.slot)
        count -= 1
        return element
    }

    @inline(__always)
    func contains(_ id: ID) -> Bool {
        Int(id.slot) < slots.count && generations[Int(id.slot)] == id.generation && occupied[Int(id.slot)]
    }

    /// The entry `id` names, or nil once it was removed. Changes go to the entry in place
    /// (a consumer's rewriter is updated per packet without copying it); assigning nil
    /// removes it as `remove` does.
    subscript(id: ID) -> Element? {
        // Inlined: an accessor coroutine that is not allocates its frame on the heap, and
        // this runs for every consumer of every packet.
        @inline(__always) _read {
            if contains(id) { yield slots[Int(id.slot)] } else { yield nil }
        }
        @inline(__always) _modify {
            if contains(id) {
                yield &slots[Int(id.slot)]
                // Asked through a pointer: reading the slot would copy its entry.
                if slots.withUnsafeBufferPointer({ $0[Int(id.slot)] == nil }) {
                    occupied[Int(id.slot)] = false
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

    /// Changes the entry `id` names in place, when there is one: the per-packet path's
    /// way in (inlined to an index and a comparison; no accessor coroutine).
    /// - Returns: what `body` returns, or nil when `id` names nothing.
    @inline(__always)
    mutating func update<Result>(_ id: ID, _ body: (inout Element) throws -> Result) rethrows -> Result? {
        guard contains(id) else { return nil }
        return try body(&slots[Int(id.slot)]!)
    }

    /// Calls `body` with every entry's ID and the entry, in slot order (a plain loop: the
    /// forwarding thread walks the transports after every datagram).
    func forEach(_ body: (ID, Element) throws -> Void) rethrows {
        for index in slots.indices where occupied[index] {
            if let element = slots[index] { try body(ID(slot: UInt32(index), generation: generations[index]), element) }
        }
    }
}
