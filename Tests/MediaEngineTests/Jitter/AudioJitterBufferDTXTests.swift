@testable import MediaEngine
@testable import MediaSimulation
import Testing
import TestSupport

/// Discontinuous transmission: the pauses between talkspurts play as comfort noise, never
/// as concealment, whether the sender sends all its 1-2 byte DTX packets or, as WebRTC
/// does, only the first of each run.
@Suite struct AudioJitterBufferDTXTests {
    @Test(arguments: [true, false])
    func silencesPlayComfortNoiseWithoutConcealment(sendsEveryDTXPacket: Bool) async throws {
        try await Heavy.run {
            var settings = ImpairmentSettings()
            settings.delay = .milliseconds(40)
            settings.jitter = .milliseconds(10)
            settings.seed = 11
            var options = AudioNetworkSimulation.Options()
            options.seconds = 30
            options.dtx = true
            options.sendsEveryDTXPacket = sendsEveryDTXPacket
            let report = try AudioNetworkSimulation.run(settings: settings, options: options)
            let statistics = report.statistics
            let comfortShare = Double(statistics.comfortNoiseSamples) / Double(statistics.totalSamplesReceived)
            print("DTX, \(sendsEveryDTXPacket ? "every DTX packet sent" : "first DTX packet of a run sent"): \(report.packetsSent) packets, "
                  + "comfort noise \(comfortShare * 100) %, concealment events \(statistics.concealmentEvents), "
                  + "accelerated \(statistics.removedSamplesForAcceleration), decelerated \(statistics.insertedSamplesForDeceleration)")
            #expect(report.framesPulled == 1_500)
            // Pauses are about a third of the signal; DTX starts some 200 ms into each.
            #expect(comfortShare > 0.1, "comfort noise \(comfortShare * 100) %")
            // Pauses never conceal. What concealment there is comes from the 10 ms jitter
            // reordering a packet past its playout time in a talkspurt: over 12 seeds, 0 to 2
            // events per 30 s (as before the simulation ran through the media core).
            #expect(statistics.concealmentEvents <= 2 && Double(statistics.concealedSamples) < 0.005 * Double(statistics.totalSamplesReceived))
            #expect(statistics.packetsLost == 0)
            if !sendsEveryDTXPacket {
                #expect(report.packetsSent < 1_300, "a DTX sender skips most silent frames: \(report.packetsSent) sent")
            }
            #expect(report.meanPlayoutDelay <= .milliseconds(80))
        }
    }

    @Test func pauseOutputIsQuiet() async throws {
        try await Heavy.run {
            // Hand-driven: 1 s of tone, 1 s of silence of which the sender sends only the first
            // DTX packet of each run, 1 s of tone.
            var configuration = Opus.Configuration()
            configuration.discontinuousTransmission = true
            let encoder = try Opus.Encoder(configuration: configuration)
            var tone = ToneGenerator(.sine(440), amplitude: 0.4)
            var silence = ToneGenerator(.silence)
            var driver = try JitterDriver(pinnedConfiguration(.milliseconds(60)))
            var sequenceNumber: UInt16 = 1_000
            var previousWasDTX = false
            for index in 0..<150 {
                let frame = (50..<100).contains(index) ? silence.nextFrame() : tone.nextFrame()
                let packet = try encoder.encode(frame)
                defer { previousWasDTX = packet.count <= 2 }
                if packet.count <= 2, previousWasDTX { continue }
                driver.deliver(packet, sequenceNumber: sequenceNumber, timestamp: UInt32(960 * index),
                               at: .milliseconds(20) * index + .milliseconds(15))
                sequenceNumber &+= 1
            }
            driver.pull(160)
            let start = driver.silentStart
            // The last 600 ms of the pause, by which time DTX has long begun.
            let pause = driver.output[((start + 70) * 960)..<((start + 100) * 960)]
            let peak = pause.map { abs(Int($0)) }.max() ?? 0
            #expect(peak < 300, "peak \(peak) during the pause")
            let statistics = driver.buffer.statistics
            #expect(driver.concealedWhilePlaying == 0 && statistics.comfortNoiseSamples >= 30 * 960, "\(statistics)")
            #expect(driver.results[(start + 110)...(start + 140)].allSatisfy { $0.sources.contains(.decoded) })
        }
    }
}
