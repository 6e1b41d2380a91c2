import Foundation
import Testing
@testable import MediaEngine

@Suite struct MouthToEarMeasures {
    @Test func aDelayedMarkedToneGivesItsDelayBack() {
        let tone = MarkedTone(frequency: 440)
        let start = ContinuousClock.now
        // Markers "sent" at 0, 1, 2 s; the "played" signal is the tone 50 ms (2,400 samples) later.
        let markers = (0..<3).map { start + .seconds($0) }
        var detector = OnsetDetector(threshold: tone.threshold)
        let delay = 2_400
        for block in 0..<(3 * 48_000 / 960) {
            let samples = (0..<960).map { offset -> Int16 in
                let index = block * 960 + offset - delay
                return index < 0 ? 0 : tone.sample(at: index)
            }
            samples.withUnsafeBufferPointer {
                detector.add($0, playedAt: start + .microseconds(Int64(block) * 20_000))
            }
        }
        let delays = OnsetDetector.delays(markers: markers, onsets: detector.onsets)
        #expect(delays.count == 3)
        for measured in delays {
            // The first sample over the threshold can come a few samples after the onset
            // (the sine starts at zero): within 0.5 ms of 50 ms.
            #expect(abs(measured / .milliseconds(1) - 50) < 0.5, "\(measured)")
        }
    }

    @Test func theSourceNotesWhenEachMarkerLeaves() throws {
        let source = MarkedToneSource(MarkedTone(frequency: 440))
        var frame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        for _ in 0..<100 { _ = try source.read(into: &frame) }
        #expect(source.markerTimes.count == 2, "markers at samples 0 and 48,000 of 96,000")
        let loud = frame.samples.map { Int($0.magnitude) }.max() ?? 0
        #expect(loud <= 3_400, "between markers the tone is quiet: \(loud)")
    }

    @Test func sequenceMatchingSurvivesDroppedPictures() {
        var pattern = TestPattern(width: 160, height: 120)
        let sent = (0..<20).map { _ in pattern.nextFrame() }
        var reference = TestPattern(width: 160, height: 120)
        var matcher = SequenceMatcher { reference.nextFrame() }
        for index in [0, 1, 2, 5, 6, 9, 10, 11] { matcher.add(sent[index]) }
        #expect(matcher.psnrs.count == 8)
        #expect(matcher.psnrs.allSatisfy { $0 >= 99 }, "each picture found its source: \(matcher.psnrs)")
        var shuffled = TestPattern(width: 160, height: 120)
        var wrong = SequenceMatcher(window: 2) { shuffled.nextFrame() }
        wrong.add(sent[15])
        #expect(wrong.meanPSNR < 40, "a picture outside the window does not match: \(wrong.meanPSNR)")
    }
}
