import Testing
@testable import MediaEngine

@Suite struct TokenBuckets {
    @Test func admitsTheBurstThenTheRate() {
        var bucket = TokenBucket(rate: 10, burst: 5)
        let start = Duration.seconds(100)
        let burst = (0..<8).filter { _ in bucket.admit(now: start) }.count
        #expect(burst == 5)
        // Over the next 2 s, 10 per second are admitted out of 100 per second offered.
        var admitted = 0
        for step in 1...200 {
            if bucket.admit(now: start + .milliseconds(10 * step)) { admitted += 1 }
        }
        #expect(admitted == 20)
    }

    @Test func refillStopsAtTheBurstAndTimeGoingBackwardsAddsNothing() {
        var bucket = TokenBucket(rate: 1, burst: 3)
        let first = (0..<4).map { _ in bucket.admit(now: .seconds(0)) }
        #expect(first == [true, true, true, false])
        // An hour idle refills to 3, not 3600.
        #expect((0..<10).filter { _ in bucket.admit(now: .seconds(3_600)) }.count == 3)
        let afterClockStep = bucket.admit(now: .seconds(3_000))
        #expect(afterClockStep == false)
    }
}
