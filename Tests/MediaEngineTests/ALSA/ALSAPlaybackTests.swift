import Foundation
import Testing
@testable import MediaEngine

/// Playback through real alsa-lib to `null` PCMs, which accept writes with no sound card.
@Suite struct ALSANullPlayback {
    /// 100 frames of stereo tone to a `null` PCM defined in configuration text: every
    /// sample is accepted and handed to the device, no error.
    @Test func framesWrittenToANullPCMAreAllAccepted() throws {
        let playback = try ALSAPlayback(name: "sink", options: .init(layout: .stereo), configuration: "pcm.sink { type null }\n")
        #expect(playback.deviceFormat == ALSAStreamFormat(sampleRate: 48_000, channels: 2, periodFrames: 960, bufferFrames: 2_880))
        var tone = ToneGenerator(.sine(440), layout: .stereo)
        for _ in 0..<100 {
            let frame = tone.nextFrame()
            try frame.samples.withUnsafeBufferPointer { try playback.write($0) }
        }
        try playback.close()
        #expect(playback.statistics.samplesWritten == 96_000)
        #expect(playback.statistics.deviceFramesWritten == 96_000)
        #expect(throws: DeviceError.self) { try [Int16](repeating: 0, count: 4).withUnsafeBufferPointer { try playback.write($0) } }
    }

    /// The stock `null` from alsa.conf, as the CLI would open it.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"] == nil, "ALSA_CONFIG_PATH replaces alsa.conf"))
    func theStockNullPCMAcceptsWrites() throws {
        let playback = try ALSAPlayback(name: "null")
        let silence = [Int16](repeating: 0, count: 960)
        for _ in 0..<50 { try silence.withUnsafeBufferPointer { try playback.write($0) } }
        try playback.close()
        #expect(playback.statistics.samplesWritten == 48_000)
    }

    /// A device held to one channel at 44.1 kHz gets the stereo 48 kHz input converted:
    /// 44 100 device frames per second of audio, give or take the resampler's delay.
    @Test func aDeviceAtAnotherRateAndChannelCountGetsConvertedAudio() throws {
        let text = "pcm.mono { type multi slaves.a { pcm { type null } channels 1 } bindings.0 { slave a channel 0 } }\n"
        let playback = try ALSAPlayback(name: "mono", options: .init(layout: .stereo, deviceRate: 44_100), configuration: text)
        #expect(playback.deviceFormat.sampleRate == 44_100)
        #expect(playback.deviceFormat.channels == 1)
        let second = ALSAFixture.tone(440, rate: 48_000, seconds: 1, channels: 2)
        try second.withUnsafeBufferPointer { try playback.write($0) }
        try playback.close()
        #expect(playback.statistics.samplesWritten == 48_000)
        #expect(abs(playback.statistics.deviceFramesWritten - 44_100) <= 44, "\(playback.statistics.deviceFramesWritten) device frames")
    }

    @Test func aPartialFrameIsATypedErrorAndPlaybackGoesOn() throws {
        let playback = try ALSAPlayback(name: "sink", options: .init(layout: .stereo), configuration: "pcm.sink { type null }\n")
        let error = #expect(throws: DeviceError.self) { try [Int16](repeating: 0, count: 3).withUnsafeBufferPointer { try playback.write($0) } }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.hasPrefix("sink: ") == true)
        try [Int16](repeating: 0, count: 1_920).withUnsafeBufferPointer { try playback.write($0) }
        try playback.close()
        try playback.close()
    }
}
