import CBatchIO
#if canImport(Glibc)
import Glibc
#endif

/// Many datagrams per system call (`recvmmsg`/`sendmmsg`), for a server that forwards:
/// one batch for receiving into buffers of its own, one for sending bytes that live
/// elsewhere (a core's transmit queue) without copying them. Allocates once, at creation.
/// Not thread-safe: one owner.
public final class DatagramBatch {
    /// The most datagrams one call moves.
    public static let maximumCount = Int(CBATCHIO_MAXIMUM)
    /// Each receive buffer's size: any datagram up to an Ethernet MTU and then some.
    public static let bufferSize = 2_048

    private let entries: UnsafeMutablePointer<CBatchIO_datagram>
    private let storage: UnsafeMutableRawBufferPointer
    /// Datagrams held now (received, or queued to send).
    public private(set) var count = 0

    public init() {
        entries = .allocate(capacity: Self.maximumCount)
        entries.initialize(repeating: CBatchIO_datagram(), count: Self.maximumCount)
        storage = .allocate(byteCount: Self.maximumCount * Self.bufferSize, alignment: 16)
    }

    deinit {
        entries.deallocate()
        storage.deallocate()
    }

    // MARK: Receiving

    /// Reads the datagrams waiting on `socket` (up to `maximumCount`), without blocking.
    /// - Returns: How many were read; `datagram(at:)` gives each.
    /// - Throws: `TransportError` when the socket fails.
    @discardableResult
    public func receive(on socket: UDPSocket) throws(TransportError) -> Int {
        guard socket.rawDescriptor >= 0 else { throw TransportError(.closed, "socket is closed") }
        for index in 0..<Self.maximumCount {
            entries[index].buffer = storage.baseAddress! + index * Self.bufferSize
            entries[index].capacity = Self.bufferSize
            entries[index].length = 0
        }
        let received = CBatchIO_receive(socket.rawDescriptor, entries, UInt32(Self.maximumCount))
        guard received >= 0 else {
            errno = -received
            throw TransportError.system("receive on \(socket.localAddress)")
        }
        count = Int(received)
        return count
    }

    /// Received datagram `index`: its bytes (in this batch's buffer, writable) and sender.
    public func datagram(at index: Int) -> (bytes: UnsafeMutableRawBufferPointer, source: SocketAddress?) {
        let entry = entries[index]
        let bytes = UnsafeMutableRawBufferPointer(start: entry.buffer, count: min(entry.length, Self.bufferSize))
        return (bytes, SocketAddress(entry.address))
    }

    /// The kernel's stamp of when received datagram `index` arrived (nanoseconds of
    /// CLOCK_REALTIME, 0 if none): an `ArrivalClock` read after `receive` turns it into the
    /// caller's time.
    public func arrivalStamp(at index: Int) -> Int64 { entries[index].arrival }

    // MARK: Sending

    /// Queues `bytes` for `destination` without copying them: they must stay valid and
    /// unchanged until `send` returns. A full batch is sent first.
    public func append(_ bytes: UnsafeRawBufferPointer, to destination: SocketAddress, on socket: UDPSocket) {
        if count == Self.maximumCount { send(on: socket) }
        destination.withSockaddr { address, length in
            withUnsafeMutableBytes(of: &entries[count].address) { target in
                target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
            }
            entries[count].addressLength = length
        }
        entries[count].buffer = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
        entries[count].length = bytes.count
        count += 1
    }

    /// Sends what is queued, in one call where the kernel takes it all; datagrams it
    /// refuses are dropped (UDP) and counted.
    public func send(on socket: UDPSocket) {
        var offset = 0
        while offset < count {
            let sent = CBatchIO_send(socket.rawDescriptor, entries + offset, UInt32(count - offset))
            if sent <= 0 {
                sendFailures += count - offset
                break
            }
            offset += Int(sent)
        }
        count = 0
    }

    /// Datagrams the kernel refused to send (a full socket buffer, a closed socket).
    public private(set) var sendFailures = 0
}
