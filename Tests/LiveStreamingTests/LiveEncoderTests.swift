import Foundation
@testable import LiveStreaming
@testable import MediaEngine
import Testing
import TestSupport

/// The shared encoders on their own: key frames on the fixed interval and on request,
/// timestamps from the room's clock, audio in any chunk size.
struct LiveEncoderTests {
    @Test(arguments: [LiveCodecFamily.h264AAC, .vp8Opus])
    func keyFramesComeOnTheIntervalAndOnRequest(_ family: LiveCodecFamily) async throws {
        try await Heavy.run {
            // Key frames and timestamps do not depend on the size: a small canvas keeps the
            // 130 encodes short.
            var format = LiveStreamFormat()
            (format.width, format.height, format.videoBitrate) = (320, 180, 400_000)
            let encoders = try LiveEncoderSet(family: family, format: format)
            var canvas = VideoFrame(width: 320, height: 180)
            let (strideY, strideUV) = (canvas.strideY, canvas.strideUV)
            canvas.withMutablePlanes { y, u, v in
                fillRedBlue(y: y, u: u, v: v, width: 320, height: 180, strideY: strideY, strideUV: strideUV)
            }
            var keyframes: [Int64] = []
            var frames = 0
            let clock = ContinuousClock()
            var longest = Duration.zero
            let started = clock.now
            for index in 0..<130 {
                if index == 75 { encoders.requestKeyframe() }
                let before = clock.now
                // 10 ms late or early: still frame `index`.
                encoders.encodeVideo(canvas, at: .milliseconds(index * 1_000 / 30 + (index % 2 == 0 ? 10 : -10))) { packet in
                    #expect(packet.isVideo)
                    frames += 1
                    if packet.isKeyframe { keyframes.append(packet.microseconds) }
                }
                longest = max(longest, clock.now - before)
            }
            // A repeated frame time is dropped, not encoded.
            encoders.encodeVideo(canvas, at: .milliseconds(129 * 1_000 / 30 + 1)) { _ in Issue.record("a repeated frame time was encoded") }
            let took = clock.now - started
            encoders.flush { packet in
                frames += 1
                if packet.isKeyframe { keyframes.append(packet.microseconds) }
            }
            print("\(family): 130 frames in \(took) (longest \(longest)), key frames at \(keyframes) µs")
            #expect(frames == 130)
            // On the 2 s interval, and the one asked for at frame 75 (2.5 s); both encoders
            // count the interval from the forced one (next at 4.5 s, past the end).
            #expect(keyframes == [0, 2_000_000, 2_500_000])
        }
    }

    @Test(arguments: [LiveCodecFamily.h264AAC, .vp8Opus])
    func audioInOddChunksComesOutContinuous(_ family: LiveCodecFamily) throws {
        let encoders = try LiveEncoderSet(family: family, format: LiveStreamFormat())
        let samples = [Int16](repeating: 1_000, count: 48_000)
        var times: [Int64] = []
        var offset = 0
        for size in [7, 333, 1_024, 4_801, 960, 20_000, 13] where offset + size <= samples.count {
            samples[offset..<offset + size].withUnsafeBufferPointer { chunk in
                encoders.encodeAudio(chunk, at: .seconds(10) + .microseconds(offset * 1_000_000 / 48_000)) { times.append($0.microseconds) }
            }
            offset += size
        }
        let step = family == .h264AAC ? 1_024 : 960
        let expected = (0..<offset / step).map { Int64(10_000_000 + $0 * step * 1_000_000 / 48_000) }
        // Packets are stamped earlier by the encoder's delay: aac's 1024-sample priming frame,
        // libopus' 312-sample lookahead (6.5 ms).
        let delay = Int64((family == .h264AAC ? 1_024 : 312) * 1_000_000 / 48_000)
        let produced = times.map { $0 + delay }
        print("\(family): \(times.count) audio packets from \(offset) samples")
        #expect(Array(expected.prefix(produced.count)) == produced.map { $0 }, "\(produced) vs \(expected)")
        #expect(produced.count >= expected.count - 2)
    }
}
