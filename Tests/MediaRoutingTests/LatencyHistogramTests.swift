import Foundation
@testable import MediaRouting
import Testing

/// The forwarding latency histogram: 10 µs steps where a healthy server lives, 1 ms steps
/// up to a second for an overloaded one, and a ceiling that says "at least".
@Suite struct LatencyHistograms {
    @Test func percentilesReadTheUpperEdgeOfTheirBucketInBothRanges() {
        var histogram = LatencyHistogram()
        histogram.record(.microseconds(3), count: 50)
        histogram.record(.microseconds(745), count: 49)
        histogram.record(.milliseconds(250) + .microseconds(400))
        #expect(histogram.count == 100)
        #expect(histogram.percentile(0.5) == .microseconds(10))
        #expect(histogram.percentile(0.99) == .microseconds(750))
        // Past 20 ms the steps are 1 ms: 250.4 ms reads as 251 ms, not as the old 20 ms cap.
        #expect(histogram.percentile(1) == .milliseconds(251))
        var other = LatencyHistogram()
        other.record(.milliseconds(20), count: 100)
        histogram.merge(other)
        #expect(histogram.percentile(0.75) == .milliseconds(21))
    }

    @Test func latenciesBeyondASecondReadAsTheCeiling() {
        var histogram = LatencyHistogram()
        histogram.record(.seconds(3), count: 2)
        histogram.record(.milliseconds(999) + .microseconds(500))
        #expect(histogram.percentile(0.2) == .seconds(1))
        #expect(histogram.percentile(0.99) == LatencyHistogram.ceiling && LatencyHistogram.ceiling == .seconds(1))
        #expect(LatencyHistogram().percentile(0.99) == .zero)
    }
}
