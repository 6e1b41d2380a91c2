import Foundation
import Testing
import TestSupport
@testable import MediaEngine

/// One session receiving several participants over one leg, as a meeting participant
/// receives everyone the server forwards: three engine senders (440, 550 and 660 Hz)
/// share one transport at the far end, as a server leg carries three publishers.
@Suite(.serialized) struct MultiParticipantSessions {
    final class Heard: Sendable {
        let byParticipant = Locked<[String: [Int16]]>([:])
        let mix = Locked<[Int16]>([])
        let speaking = Locked<Set<String>>([])
        let speakingLevels = Locked<[String: Double]>([:])
        let stop = Locked(false)
    }

    @Test func threeParticipantsAreDecodedApartAndPlayedTogether() async throws {
        try await Heavy.run {
            let tones: [(participant: String, frequency: Double, ssrc: UInt32)] = [("", 440, 0x4401), ("bob", 550, 0x5501), ("carol", 660, 0x6601)]

            // The far end of the leg: one socket and core, three send streams.
            let legKey = SRTPKeyingMaterial.random()
            var legSettings = MediaCore.Configuration()
            legSettings.outboundKeying = legKey
            let legCore = try MediaCore(configuration: legSettings)
            let legICE = ICECredentials(ufrag: "legs", password: "leg-password-0123456789ab")
            let streams = try tones.map { try legCore.addSendStream(.opus(ssrc: $0.ssrc)) }
            let leg = PeerTransport(core: legCore, sockets: [try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))])
            defer { leg.close() }

            // This side: one session, the leg's first stream as the peer, two more participants.
            let heard = Heard()
            var configuration = MediaSession.Configuration(audio: try MediaSources.audio("silence"), video: nil)
            configuration.host = "127.0.0.1"
            configuration.participantAudio = { participant, pcm in heard.byParticipant.withLock { $0[participant, default: []].append(contentsOf: pcm) } }
            configuration.remoteAudio = { pcm in heard.mix.withLock { $0.append(contentsOf: pcm) } }
            let session = try MediaSession(configuration: configuration)
            try leg.withCore { core, now in
                try core.setInboundKeying(session.local.keying)
                let host = ICECandidate.local(.host, address: leg.sockets[0].localAddress, localPreference: 65_535)
                core.startICE(local: legICE, controlling: false, hosts: [host], stunServers: [], timeout: .seconds(5), now: now)
                core.setRemoteICE(session.local.ice, candidates: session.local.candidates, complete: true, now: now)
            }
            let legCandidates = leg.sockets.map { ICECandidate.local(.host, address: $0.localAddress, localPreference: 65_535) }
            try session.start(remote: MediaSession.Endpoint(candidates: legCandidates, keying: legKey, audioSSRC: tones[0].ssrc,
                                                            videoSSRC: nil, ice: legICE)) { event in
                if case .speakingUsers(let users) = event {
                heard.speaking.withLock { $0.formUnion(users.keys) }
                heard.speakingLevels.withLock { $0.merge(users) { max($0, $1) } }
            }
            }
            for tone in tones.dropFirst() {
                try session.addParticipant(MediaSession.Participant(id: tone.participant, audioSSRC: tone.ssrc, videoSSRC: nil))
            }
            #expect(Set(session.participantIDs) == ["", "bob", "carol"])

            let legLoop = Background { try leg.run(stop: { heard.stop.withLock { $0 } }, locked: { _, _ in true }) }
            #expect(await eventually { leg.withCore { core, _ in core.path != nil } }, "the leg found the session")

            // Three engine senders on the leg's one transport, each on its own thread.
            let senders = try zip(tones, streams).map { tone, stream in
                let source = ToneSource(ToneGenerator(.sine(tone.frequency), amplitude: 0.2), name: "\(tone.frequency) Hz")
                var settings = MediaSender.Configuration(audio: source, video: nil, audioDestination: .unspecified, videoDestination: .unspecified)
                settings.audioBitrate = 48_000
                return try MediaSender(configuration: settings, transport: leg, audio: stream, video: nil, readsFeedback: false)
            }
            let sending = senders.map { sender in
                nonisolated(unsafe) let sender = sender
                return Background { try sender.run(duration: .seconds(3)) }
            }
            let sent = try sending.map { try $0.wait() }
            // Every packet sent has arrived (or is counted lost) before the session stops.
            #expect(await eventually {
                let streams = session.receiveStatistics.streams
                return zip(tones, sent).allSatisfy { tone, sent in
                    streams.contains { $0.participant == tone.participant && $0.packetsReceived + $0.packetsLost >= sent.audioPackets }
                }
            }, "\(session.receiveStatistics.streams.map(\.packetsReceived)) of \(sent.map(\.audioPackets))")
            let summary = await session.stop()
            heard.stop.withLock { $0 = true }
            _ = try legLoop.wait()

            #expect(summary.failure == nil)
            let byParticipant = heard.byParticipant.withLock { $0.deeplyDetached() }
            for tone in tones {
                let audio = try #require(byParticipant[tone.participant], "\(tone.participant) was heard")
                #expect(audio.count >= 48_000 * 2, "\(audio.count) samples of \(tone.participant)")
                let window = audio.dropFirst(24_000).prefix(48_000)
                let frequency = window.withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
                #expect(abs((frequency ?? 0) - tone.frequency) < 2, "\(tone.participant): \(frequency ?? 0) Hz")
                for other in tones where other.frequency != tone.frequency {
                    let leak = window.withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: other.frequency) }
                    #expect(leak < 0.01, "\(tone.participant) carries \(other.frequency) Hz at \(leak)")
                }
            }
            // Each tone's level in the mix, per 100 ms (a window spanning a time-stretch step
            // would see its phase jump), the median over what follows the first half second.
            let mix = heard.mix.withLock { $0.detached }
            let levels = tones.map { tone in
                let windows = stride(from: 24_000, to: mix.count - 4_800, by: 4_800).map { start in
                    mix[start..<(start + 4_800)].withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: tone.frequency) }
                }.sorted()
                return windows.isEmpty ? 0 : windows[windows.count / 2]
            }
            print("three participants: \(sent.map(\.audioPackets)) packets sent, levels in the mix \(levels), speaking \(heard.speaking.withLock { $0.detached })")
            for (tone, level) in zip(tones, levels) {
                #expect(abs(level - 0.2) < 0.02, "\(tone.frequency) Hz at \(level) of full scale in the mix")
            }
            #expect(heard.speaking.withLock { $0.detached } == ["", "bob", "carol"], "RFC 6464 voice activity of each")
        // A sine at 0.2 of full scale has an RMS of 0.141 (-17 dBov), which is what each sender stamped.
        for (participant, level) in heard.speakingLevels.withLock({ $0.detached }) {
            #expect(abs(level - 0.141) < 0.01, "\(participant) speaks at \(level)")
        }
            let streamsReceived = summary.received?.streams ?? []
            #expect(Set(streamsReceived.map(\.participant)) == ["", "bob", "carol"])
            #expect(streamsReceived.allSatisfy { $0.packetsLost == 0 && $0.authenticationFailures == 0 })
        }
    }
}
