import Foundation
import Testing
@testable import MediaEngine

/// The pieces between the device and the reader, driven directly: the channel remix and
/// resampling edge, and the frame queue.
@Suite struct ALSAEdge {
    @Test func remixAveragesToMonoCopiesMonoAndMapsChannelByChannel() {
        func remix(_ input: [Int16], _ from: Int, _ to: Int) -> [Int16] {
            var output = [Int16](repeating: -1, count: input.count / from * to)
            input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { AudioMixer.remix(source, channels: from, into: $0, channels: to) }
            }
            return output
        }
        #expect(remix([100, 300, -5, -8], 2, 1) == [200, -6])          // average, truncated toward zero
        #expect(remix([1, 2, 3, 4, 5, 6], 3, 1) == [2, 5])
        #expect(remix([7, -7], 1, 2) == [7, 7, -7, -7])
        #expect(remix([7], 1, 4) == [7, 7, 0, 0])                        // mono to front left and right
        #expect(remix([1, 2, 3, 4, 5, 6], 3, 2) == [1, 2, 4, 5])         // extra device channels dropped
        #expect(remix([1, 2], 2, 4) == [1, 2, 0, 0])
        #expect(remix([Int16.max, Int16.max], 2, 1) == [Int16.max])      // no overflow
    }

    /// Device rates other than 48 kHz, in both directions and both layouts, keep a tone's
    /// pitch within 1 Hz and the audio's length within a few samples per second.
    @Test(arguments: [(44_100, 48_000, 2, 1), (44_100, 48_000, 1, 2), (48_000, 44_100, 2, 2), (16_000, 48_000, 1, 1)])
    func theBridgeResamplesAndRemixes(inputRate: Int, outputRate: Int, inputChannels: Int, outputChannels: Int) throws {
        let bridge = try ALSAFormatBridge(inputRate: inputRate, inputChannels: inputChannels, outputRate: outputRate,
                                          outputChannels: outputChannels, maximumInputFrames: inputRate / 50)
        #expect(bridge.resamples)
        let input = ALSAFixture.tone(440, rate: inputRate, seconds: 1, channels: inputChannels)
        var output: [Int16] = []
        let block = inputRate / 50 * inputChannels
        for start in stride(from: 0, to: input.count, by: block) {
            input[start..<min(input.count, start + block)].withUnsafeBufferPointer { output += bridge.convert($0) }
        }
        output += bridge.flush()
        #expect(abs(output.count / outputChannels - outputRate) <= outputRate / 1_000, "\(output.count / outputChannels) frames")
        for channel in 0..<outputChannels {
            let samples = stride(from: channel, to: output.count, by: outputChannels).map { output[$0] }.dropFirst(outputRate / 20)
            let frequency = Array(samples).withUnsafeBufferPointer { AudioQuality.toneFrequency($0, sampleRate: outputRate) } ?? 0
            #expect(abs(frequency - 440) < 1, "channel \(channel): \(frequency) Hz")
        }
    }

    @Test func equalRatesDoNotResampleAndPassSamplesThrough() throws {
        let bridge = try ALSAFormatBridge(inputRate: 48_000, inputChannels: 2, outputRate: 48_000, outputChannels: 2, maximumInputFrames: 960)
        #expect(!bridge.resamples)
        let input: [Int16] = [1, 2, 3, 4]
        let output = input.withUnsafeBufferPointer { Array(bridge.convert($0)) }
        #expect(output == input)
        #expect(bridge.flush().isEmpty)
    }

    @Test func theQueueDropsTheOldestCountsItAndDrainsBeforeFailing() {
        let queue = ALSAFrameQueue(frameSamples: 2, capacity: 2, frameDuration: .milliseconds(20))
        for index in 0..<5 {
            let samples: [Int16] = [Int16(index), Int16(index)]
            samples.withUnsafeBufferPointer { queue.push($0, timestamp: .milliseconds(20 * index)) }
        }
        #expect(queue.statistics.framesDropped == 3)
        #expect(queue.statistics.framesCaptured == 5)
        var out: [Int16] = [0, 0]
        let first = out.withUnsafeMutableBufferPointer { queue.pop(into: $0, timeout: .milliseconds(1), firstTimeout: .zero) }
        #expect(first == .frame(.milliseconds(60)))
        #expect(out == [3, 3])
        queue.finish(DeviceError(.disconnected, device: "mic", "gone"))
        // What was captured before the failure is still delivered, then the error.
        let second = out.withUnsafeMutableBufferPointer { queue.pop(into: $0, timeout: .milliseconds(1), firstTimeout: .zero) }
        #expect(second == .frame(.milliseconds(80)))
        let third = out.withUnsafeMutableBufferPointer { queue.pop(into: $0, timeout: .milliseconds(1), firstTimeout: .zero) }
        #expect(third == .failed(DeviceError(.disconnected, device: "mic", "gone")))
    }

    @Test func aLateFrameBecomesCountedSilenceStampedOneFrameOn() {
        let queue = ALSAFrameQueue(frameSamples: 2, capacity: 4, frameDuration: .milliseconds(20))
        let samples: [Int16] = [5, 5]
        samples.withUnsafeBufferPointer { queue.push($0, timestamp: .seconds(7)) }
        var out: [Int16] = [0, 0]
        _ = out.withUnsafeMutableBufferPointer { queue.pop(into: $0, timeout: .milliseconds(5), firstTimeout: .zero) }
        let started = ContinuousClock.now
        let late = out.withUnsafeMutableBufferPointer { queue.pop(into: $0, timeout: .milliseconds(30), firstTimeout: .zero) }
        let waited = ContinuousClock.now - started
        #expect(late == .silence(.seconds(7) + .milliseconds(20)))
        #expect(out == [0, 0])
        #expect(queue.statistics.silentFrames == 1)
        #expect(waited >= .milliseconds(30) && waited < .milliseconds(500), "waited \(waited)")
        queue.requestStop()
        let stopped = out.withUnsafeMutableBufferPointer { queue.pop(into: $0, timeout: .seconds(5), firstTimeout: .zero) }
        #expect(stopped == .stopped)
    }
}
