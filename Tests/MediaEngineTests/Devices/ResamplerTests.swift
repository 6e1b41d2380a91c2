import Foundation
import Testing
@testable import MediaEngine

@Suite struct Resampling {
    @Test(arguments: [44_100, 16_000, 96_000])
    func aToneKeepsItsPitchAndTheLengthFollowsTheRatio(rate: Int) throws {
        let resampler = try Resampler(inputRate: rate, layout: .mono)
        // One second of 1 kHz at the device's rate, fed in 10 ms blocks.
        let input = (0..<rate).map { Int16((sin(2 * Double.pi * 1_000 * Double($0) / Double(rate)) * 12_000).rounded()) }
        var output: [Int16] = []
        var block = [Int16](repeating: 0, count: 4_800)
        for start in stride(from: 0, to: input.count, by: rate / 100) {
            let count = input[start..<min(input.count, start + rate / 100)].withUnsafeBufferPointer { chunk in
                block.withUnsafeMutableBufferPointer { resampler.process(chunk, into: $0) }
            }
            output += block[0..<count]
        }
        let tail = block.withUnsafeMutableBufferPointer { resampler.flush(into: $0) }
        output += block[0..<tail]
        #expect(abs(output.count - 48_000) <= 48, "\(output.count) samples from one second")
        let frequency = output.dropFirst(2_400).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
        #expect(abs((frequency ?? 0) - 1_000) < 0.5, "\(frequency ?? 0) Hz")
    }

    @Test func impossibleRatesAreTypedErrors() {
        let error = #expect(throws: DeviceError.self) { try Resampler(inputRate: 0, layout: .stereo) }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("0 Hz") == true)
    }
}
