@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

extension BandwidthTests {
    @Suite struct BandwidthVP8Tests {
        @Test func aRealVP8EncoderFollowsTheTarget() async throws {
            try await Heavy.run {
                var settings = ImpairmentSettings()
                settings.rateKbps = 400
                settings.queueLimit = .milliseconds(300)
                settings.delay = .milliseconds(25)
                var simulation = try BandwidthSimulation(settings: settings, startBitrate: 900_000, maxBitrate: 1_200_000)
                let encoder = try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 900_000))
                var pattern = TestPattern(width: 320, height: 240)
                var frame = VideoFrame(width: 320, height: 240)
                var output = [UInt8](repeating: 0, count: encoder.maximumFrameSize)
                // Per second: bits the encoder produced and the target it was given, frame by frame.
                var produced = [Int](repeating: 0, count: 10)
                var asked = [Int](repeating: 0, count: 10)
                var frames = 0
                try simulation.run(for: .seconds(10)) { target, time in
                    // Follow the estimate when it moves by more than 5 %, as a sender would.
                    if abs(target - encoder.configuration.bitrate) * 20 > encoder.configuration.bitrate {
                        try encoder.setBitrate(target)
                    }
                    pattern.render(into: &frame)
                    frame.timestamp = time
                    let info = try output.withUnsafeMutableBytes { try encoder.encode(frame, into: $0) }
                    let second = min(9, Int(time / .seconds(1)))
                    produced[second] += (info?.byteCount ?? 0) * 8
                    asked[second] += target / 30
                    frames += 1
                    return info?.byteCount ?? 0
                }
                #expect(frames == 300)
                let report = simulation.report
                let settled = try #require(report.settleTime())
                #expect(settled <= .seconds(5), "settled at \(settled)")
                // After the first second (keyframe, start-up), each second's output is within
                // 30 % of what was asked, and the total within 15 %.
                for second in 2..<10 {
                    let ratio = Double(produced[second]) / Double(asked[second])
                    #expect((0.7...1.3).contains(ratio), "second \(second): \(produced[second]) b for \(asked[second]) asked")
                }
                let ratio = Double(produced[2...].reduce(0, +)) / Double(asked[2...].reduce(0, +))
                #expect((0.85...1.15).contains(ratio), "overall \(ratio)")
                // And the encoder really went down with the estimate: under the 400 kb/s link.
                #expect(produced[9] < 420_000)
                #expect(report.lossAfterSettling < 0.02, "loss after settling \(report.lossAfterSettling)")
            }
        }
    }
}
