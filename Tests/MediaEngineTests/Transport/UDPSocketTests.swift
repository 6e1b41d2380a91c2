import Glibc
import Testing
@testable import MediaEngine

@Suite struct UDPSockets {
    @Test(arguments: ["127.0.0.1", "::1"])
    func datagramsCrossLoopbackOnPortZero(host: String) throws {
        let a = try UDPSocket(bindTo: SocketAddress(host: host, port: 0))
        let b = try UDPSocket(bindTo: SocketAddress(host: host, port: 0))
        #expect(a.localAddress.port != 0 && a.localAddress.port != b.localAddress.port)
        #expect(a.localAddress.isIPv6 == host.contains(":"))
        let message: [UInt8] = [0x80, 0x60, 1, 2, 3]
        try message.withUnsafeBytes { try a.send($0, to: b.localAddress) }
        var buffer = [UInt8](repeating: 0, count: 1_500)
        let received = try buffer.withUnsafeMutableBytes { try b.receive(into: $0, timeout: .seconds(2)) }
        let (count, sender) = try #require(received)
        #expect(Array(buffer[0..<count]) == message)
        #expect(sender == a.localAddress)
    }

    /// A process the app starts does not inherit the socket (and keep its port bound).
    @Test(arguments: ["127.0.0.1", "::1"])
    func socketsCloseOnExec(host: String) throws {
        let socket = try UDPSocket(bindTo: SocketAddress(host: host, port: 0))
        let flags = fcntl(socket.rawDescriptor, F_GETFD)
        #expect(flags >= 0 && flags & FD_CLOEXEC != 0, "descriptor flags \(flags)")
    }

    /// A reader that comes late (a thread held off the processor) still learns when each
    /// datagram arrived: the kernel stamps them, one at a time (`receiveStamped`) and in a
    /// batch (`DatagramBatch`), and an `ArrivalClock` read after the read puts the stamps
    /// on the reader's clock. Sent 10 ms apart and read together 30 ms after the last, they
    /// keep their spacing.
    @Test func datagramsReadLateCarryTheTimesTheyArrived() throws {
        let sender = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let single = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let batched = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let clock = ContinuousClock()
        let origin = clock.now
        for index in 0..<4 {
            if index > 0 { usleep(10_000) }
            try [UInt8(index)].withUnsafeBytes {
                try sender.send($0, to: single.localAddress)
                try sender.send($0, to: batched.localAddress)
            }
        }
        let lastSent = clock.now - origin
        usleep(30_000)

        var buffer = [UInt8](repeating: 0, count: 64)
        let stamps = ArrivalClock(now: clock.now - origin)
        var singly: [Duration] = []
        while let (count, _, stamp) = try buffer.withUnsafeMutableBytes({ try single.receiveStamped(into: $0) }) {
            #expect(count == 1 && buffer[0] == UInt8(singly.count))
            singly.append(stamps.arrival(stamp: stamp))
        }
        let batch = DatagramBatch()
        let count = try batch.receive(on: batched)
        let batchClock = ArrivalClock(now: clock.now - origin)
        let together = (0..<count).map { batchClock.arrival(stamp: batch.arrivalStamp(at: $0)) }

        for (name, arrivals) in [("one at a time", singly), ("in a batch", together)] {
            #expect(arrivals.count == 4, "\(name)")
            let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
            // 10 ms or more apart (the sender slept at least that), each before the read by
            // the 30 ms the reader waited, and none before the first was sent.
            #expect(gaps.allSatisfy { $0 >= .microseconds(9_500) }, "\(name): \(gaps)")
            #expect((arrivals.last ?? .zero) <= lastSent + .milliseconds(1) && (arrivals.first ?? .zero) >= .milliseconds(-1),
                    "\(name): \(arrivals), last sent at \(lastSent)")
        }
    }

    /// A datagram without a stamp arrived "now"; one stamped after the clocks were read,
    /// too; one stamped further back than `maximumWait` (the wall clock stepped) is put
    /// `maximumWait` back, not minutes.
    @Test func anArrivalClockKeepsArrivalsBetweenItsLimits() {
        let clock = ArrivalClock(now: .seconds(100), realtimeNanoseconds: 1_000_000_000_000)
        #expect(clock.arrival(stamp: 0) == .seconds(100))
        #expect(clock.arrival(stamp: 1_000_000_000_000 - 2_500_000) == .seconds(100) - .microseconds(2_500))
        #expect(clock.arrival(stamp: 1_000_000_000_000 + 7_000_000) == .seconds(100))
        #expect(clock.arrival(stamp: 1_000_000_000_000 - 600_000_000_000) == .seconds(99))
    }

    @Test func receiveTimesOutWithNil() throws {
        let socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        var buffer = [UInt8](repeating: 0, count: 64)
        let start = ContinuousClock.now
        let result = try buffer.withUnsafeMutableBytes { try socket.receive(into: $0, timeout: .milliseconds(50)) }
        #expect(result == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(45))
    }

    @Test func pollerReportsWhichSocketIsReady() throws {
        let sockets = try (0..<3).map { _ in try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0)) }
        var poller = SocketPoller(sockets: sockets)
        #expect(try poller.wait(timeout: .zero) == nil)
        try [UInt8]([1]).withUnsafeBytes { try sockets[0].send($0, to: sockets[2].localAddress) }
        #expect(try poller.wait(timeout: .seconds(2)) == 2)
    }

    /// The poller keeps its sockets open. (It once kept only their descriptor numbers: an
    /// optimized build freed sockets nothing else held, closing them under the poller, and
    /// a closed descriptor reads as ready, so `wait` named the first one at once.)
    @Test func aPollerHoldsItsSockets() throws {
        var poller: SocketPoller
        let target: SocketAddress
        do {
            let sockets = try (0..<2).map { _ in try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0)) }
            target = sockets[1].localAddress
            poller = SocketPoller(sockets: sockets)
        }
        let sender = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        #expect(try poller.wait(timeout: .milliseconds(20)) == nil)
        try [UInt8]([1]).withUnsafeBytes { try sender.send($0, to: target) }
        #expect(try poller.wait(timeout: .seconds(2)) == 1)
    }

    @Test func aSocketClosedUnderItsPollerIsAnError() throws {
        let sockets = try (0..<2).map { _ in try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0)) }
        var poller = SocketPoller(sockets: sockets)
        sockets[1].close()
        let error = #expect(throws: TransportError.self) { try poller.wait(timeout: .seconds(2)) }
        #expect(error?.code == .closed, "\(String(describing: error))")
    }

    @Test(arguments: [("", "is not HOST:PORT"), ("localhost", "is not HOST:PORT"), ("127.0.0.1:70000", "70000"),
                      ("no-such-host.invalid:5000", "cannot resolve 'no-such-host.invalid'")])
    func badAddressesAreTypedErrors(text: String, message: String) {
        let error = #expect(throws: TransportError.self) { try SocketAddress(parsing: text) }
        #expect(error?.code == .badAddress)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test func addressesParseAndPrint() throws {
        #expect(try SocketAddress(parsing: "127.0.0.1:5004").description == "127.0.0.1:5004")
        #expect(try SocketAddress(parsing: "[::1]:5006").description == "[::1]:5006")
        #expect(try SocketAddress(parsing: "::1:5006").port == 5_006)
        #expect(try SocketAddress(parsing: "127.0.0.1:5004").with(port: 5005).port == 5_005)
    }

    @Test func bindingATakenPortFailsNamingIt() throws {
        let first = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
        let error = #expect(throws: TransportError.self) { try UDPSocket(bindTo: first.localAddress) }
        #expect(error?.message.contains("bind 127.0.0.1:\(first.localAddress.port)") == true)
        #expect(error?.message.contains("in use") == true, "\(String(describing: error))")
    }

    @Test func datagramsAreClassified() {
        func kind(_ bytes: [UInt8]) -> DatagramKind { bytes.withUnsafeBytes { DatagramKind($0) } }
        #expect(kind([0x80, 0x60]) == .rtp)
        #expect(kind([0x80, 0xE0]) == .rtp)          // PT 96 with marker
        #expect(kind([0x80, 200]) == .rtcp)          // SR
        #expect(kind([0x81, 205]) == .rtcp)          // NACK
        #expect(kind([0x00, 0x01, 0x00, 0x00]) == .stun)
        #expect(kind([0x16, 0xFE]) == .dtls)
        #expect(kind([]) == .unknown)
        #expect(kind([0x80]) == .unknown)
        #expect(kind([0xFF, 0x00]) == .unknown)
    }
}
