import Foundation
@testable import MediaEngine
@testable import MediaRouting
import Testing

/// The ring forwarding workers hand packets over with: order, whole packets, a full ring
/// refusing rather than waiting, and two threads at full speed (also under ThreadSanitizer
/// in CI) losing, reordering or tearing nothing.
@Suite struct HandoffRingTests {
    struct Header: Equatable {
        var stream: UInt32
        var sequence: UInt32
    }

    @Test func packetsComeOutInOrderWholeAndAFullRingRefusesTheNext() {
        let ring = HandoffRing<Header>(capacity: 3, slotSize: 64, placeholder: Header(stream: 0, sequence: 0))
        #expect(ring.capacity == 4)
        for index in 0..<4 {
            let packet = [UInt8](repeating: UInt8(index), count: index + 1)
            #expect(packet.withUnsafeBytes { ring.push($0, header: Header(stream: 7, sequence: UInt32(index))) })
        }
        #expect(!([UInt8](repeating: 9, count: 5).withUnsafeBytes { ring.push($0, header: Header(stream: 7, sequence: 4)) }))
        #expect(ring.refused == 1 && ring.count == 4)
        // Longer than a slot: refused, never cut.
        #expect(!([UInt8](repeating: 1, count: 65).withUnsafeBytes { ring.push($0, header: Header(stream: 7, sequence: 5)) }))
        #expect(ring.refused == 2)
        for index in 0..<4 {
            var got: (Header, [UInt8])?
            let popped = ring.pop { bytes, header in got = (header, Array(bytes)) }
            #expect(popped && got?.0 == Header(stream: 7, sequence: UInt32(index)))
            #expect(got?.1 == [UInt8](repeating: UInt8(index), count: index + 1))
        }
        let empty = ring.pop { _, _ in }
        #expect(!empty, "an empty ring gave a packet")
        // Freed slots take packets again, in place.
        let filled = ring.push(header: Header(stream: 1, sequence: 1)) { slot in
            slot.storeBytes(of: UInt32(0xCAFE_F00D), as: UInt32.self)
            return 4
        }
        #expect(filled)
        var word: UInt32?
        let popped = ring.pop { bytes, _ in word = bytes.count == 4 ? bytes.loadUnaligned(as: UInt32.self) : nil }
        #expect(popped && word == 0xCAFE_F00D)
    }

    @Test func twoThreadsHandOverTwoHundredThousandPacketsWithoutLossReorderOrTearing() async {
        let ring = HandoffRing<Header>(capacity: 256, slotSize: 256, placeholder: Header(stream: 0, sequence: 0))
        let total = 200_000
        let producer = Thread {
            var packet = [UInt8](repeating: 0, count: 256)
            var sequence = 0
            while sequence < total {
                // Each packet's bytes all say its sequence; its length varies with it.
                let length = 16 + sequence % 240
                let fill = UInt8(truncatingIfNeeded: sequence)
                for index in 0..<length { packet[index] = fill }
                let pushed = packet.withUnsafeBytes { ring.push(UnsafeRawBufferPointer(rebasing: $0[0..<length]),
                                                               header: Header(stream: 1, sequence: UInt32(sequence))) }
                if pushed { sequence += 1 }
            }
        }
        let done = Locked(false)
        let problems = Locked<[String]>([])
        let consumer = Thread {
            var expected = 0
            while expected < total {
                _ = ring.pop { bytes, header in
                    if header.sequence != UInt32(expected) {
                        problems.withLock { $0.append("packet \(header.sequence) came where \(expected) was due") }
                    }
                    let length = 16 + expected % 240
                    let fill = UInt8(truncatingIfNeeded: expected)
                    if bytes.count != length || bytes.contains(where: { $0 != fill }) {
                        problems.withLock { $0.append("packet \(expected) is torn: \(bytes.count) bytes") }
                    }
                    expected += 1
                }
            }
            done.withLock { $0 = true }
        }
        producer.start()
        consumer.start()
        let deadline = Date().addingTimeInterval(120)
        while !done.withLock({ $0 }) && Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        #expect(done.withLock { $0 }, "the consumer got every packet")
        #expect(problems.withLock { $0 }.prefix(5).isEmpty, "\(problems.withLock { $0 }.prefix(5))")
        #expect(ring.count == 0)
    }

    @Test func aDoorbellWakesAPollerOnceForManyRings() throws {
        let socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let doorbell = try Doorbell()
        var poller = SocketPoller(sockets: [socket], doorbell: doorbell)
        #expect(try poller.wait(timeout: .milliseconds(10)) == nil, "nothing rang")
        doorbell.ring()
        doorbell.ring()
        #expect(try poller.wait(timeout: .seconds(5)) == 1, "the doorbell's index follows the sockets'")
        #expect(try poller.wait(timeout: .milliseconds(10)) == nil, "two rings wake one wait")
        // From another thread, while waiting.
        let ringer = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            doorbell.ring()
        }
        ringer.start()
        #expect(try poller.wait(timeout: .seconds(5)) == 1)
    }
}
