@testable import MediaEngine
@testable import MediaSimulation
import Testing

@Suite struct DeliveryHeaps {
    @Test func popsInTimeOrderAndFirstInFirstOutForEqualTimes() {
        var heap = DeliveryHeap<Int>()
        var random = SeededRandom(seed: 5)
        var inserted: [(due: Duration, index: Int)] = []
        // Few distinct times, so most share one with others.
        for index in 0..<1_000 {
            let due = Duration.milliseconds(Int64(random.next() % 20))
            heap.insert(index, due: due)
            inserted.append((due, index))
        }
        var popped: [(due: Duration, index: Int)] = []
        while let next = heap.popFirst() { popped.append((next.due, next.element)) }
        let expected = inserted.sorted { $0.due < $1.due || ($0.due == $1.due && $0.index < $1.index) }
        #expect(popped.map(\.index) == expected.map(\.index))
        #expect(heap.isEmpty && heap.nextDue == nil)
    }

    @Test func popDueWaitsForTheTime() {
        var heap = DeliveryHeap<String>()
        heap.insert("late", due: .milliseconds(30))
        heap.insert("early", due: .milliseconds(10))
        heap.insert("also early", due: .milliseconds(10))
        #expect(heap.nextDue == .milliseconds(10))
        #expect(heap.popDue(now: .milliseconds(9)) == nil)
        #expect(heap.popDue(now: .milliseconds(10))?.element == "early")
        #expect(heap.popDue(now: .milliseconds(10))?.element == "also early")
        #expect(heap.popDue(now: .milliseconds(29)) == nil)
        #expect(heap.count == 1)
        #expect(heap.popDue(now: .seconds(1))?.element == "late")
    }

    @Test func pollTimeoutsRoundUpSoNothingLeavesEarly() {
        #expect(ImpairmentProxyLoop.roundedUpMilliseconds(.zero) == 0)
        #expect(ImpairmentProxyLoop.roundedUpMilliseconds(.milliseconds(-3)) == 0)
        #expect(ImpairmentProxyLoop.roundedUpMilliseconds(.microseconds(1)) == 1)
        #expect(ImpairmentProxyLoop.roundedUpMilliseconds(.milliseconds(20)) == 20)
        #expect(ImpairmentProxyLoop.roundedUpMilliseconds(.microseconds(20_001)) == 21)
        #expect(ImpairmentProxyLoop.roundedUpMilliseconds(.seconds(5)) == 5_000)
    }
}
