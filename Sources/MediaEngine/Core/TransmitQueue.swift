/// Audio or video: what a stream carries.
public enum MediaKind: String, Sendable, Hashable, CaseIterable {
    case audio, video
}

/// One datagram the core wants sent: where, from which local socket, and what it is.
/// `bytes` points into the core's queue and stays valid until the next call into the core.
public struct Transmit {
    /// What the datagram carries (simulations and statistics tell them apart).
    public enum Kind: Sendable, Hashable {
        /// An RTP packet sent for the first time.
        case rtp
        /// A stored RTP packet sent again in answer to a NACK.
        case retransmission
        /// A padding-only packet on an RTX stream: the SFU probing a subscriber's link.
        case padding
        /// An RTCP compound packet (reports or feedback).
        case rtcp
        /// A STUN request or answer (connectivity and consent checks).
        case stun
        /// A DTLS handshake datagram (RFC 5764).
        case dtls
    }

    public var bytes: UnsafeRawBufferPointer
    public var destination: SocketAddress
    /// Index of the local socket to send from (0 for a bundled transport).
    public var socket: Int
    public var kind: Kind
}

/// The core's outgoing datagrams in order: a ring of slots allocated once, so queueing
/// and dequeueing allocate nothing. When every slot is taken the newest datagram is
/// dropped and counted (the I/O loop drains the queue after every input, so this only
/// happens under a burst larger than the ring). Not thread-safe.
package final class TransmitQueue {
    struct Entry {
        var destination: SocketAddress
        var socket: Int
        var kind: Transmit.Kind
        var length: Int
    }

    /// Bytes in one slot: a full datagram plus room for the SRTP or SRTCP trailer.
    static let slotSize = 1_500 + SRTPContext.trailerCapacity

    let capacity: Int
    private let storage: UnsafeMutableRawBufferPointer
    private var entries: [Entry]
    private var head = 0
    private(set) var count = 0
    /// Datagrams dropped because the ring was full.
    private(set) var overflows = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        storage = UnsafeMutableRawBufferPointer.allocate(byteCount: self.capacity * Self.slotSize, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        let placeholder = Entry(destination: SocketAddress.unspecified, socket: 0, kind: .rtp, length: 0)
        entries = [Entry](repeating: placeholder, count: self.capacity)
    }

    deinit {
        storage.deallocate()
    }

    private func slot(_ index: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: storage[(index * Self.slotSize)..<((index + 1) * Self.slotSize)])
    }

    /// Writes one datagram into the next free slot.
    /// - Parameter write: fills the slot it is given and returns the datagram's length
    ///   (0 or less abandons it).
    /// - Returns: false when the ring is full or `write` abandoned the datagram.
    @discardableResult
    package func enqueue(to destination: SocketAddress, socket: Int, kind: Transmit.Kind,
                 write: (UnsafeMutableRawBufferPointer) throws -> Int) rethrows -> Bool {
        guard count < capacity else {
            overflows += 1
            return false
        }
        let index = (head + count) % capacity
        let length = try write(slot(index))
        guard length > 0 else { return false }
        entries[index] = Entry(destination: destination, socket: socket, kind: kind, length: min(length, Self.slotSize))
        count += 1
        return true
    }

    /// Copies `bytes` into the next free slot (a stored packet being resent).
    @discardableResult
    func enqueue(copying bytes: UnsafeRawBufferPointer, to destination: SocketAddress, socket: Int, kind: Transmit.Kind) -> Bool {
        guard bytes.count <= Self.slotSize else { return false }
        return enqueue(to: destination, socket: socket, kind: kind) { slot in
            UnsafeMutableRawBufferPointer(rebasing: slot[0..<bytes.count]).copyMemory(from: bytes)
            return bytes.count
        }
    }

    /// The oldest datagram, removed from the queue; its bytes stay valid until the next enqueue.
    package func dequeue() -> Transmit? {
        guard count > 0 else { return nil }
        let entry = entries[head]
        let bytes = UnsafeRawBufferPointer(rebasing: slot(head)[0..<entry.length])
        head = (head + 1) % capacity
        count -= 1
        return Transmit(bytes: bytes, destination: entry.destination, socket: entry.socket, kind: entry.kind)
    }
}
