import Foundation
import Testing
import TestSupport
@testable import MediaEngine

@Suite(.serialized) struct ReceiverBadInput {
    /// Throws stray, malformed, tampered and replayed datagrams at a receiver between good
    /// packets: each is counted and dropped, and the good stream is decoded whole.
    @Test func badDatagramsAreCountedAndDroppedWhileTheStreamGoesOn() async throws {
        try await Heavy.run {
            let key = SRTPKeyingMaterial.random()
            nonisolated(unsafe) let receiver = try MediaReceiver(streams: [
                MediaReceiver.StreamDescription(kind: .audio, payloadType: 111, clockRate: 48_000, port: 0, rtcpPort: 0, keying: key,
                                                ssrc: 42),
            ], host: "127.0.0.1")
            let target = receiver.sockets[0].localAddress
            let receiving = Background { () throws -> (MediaReceiver.Statistics, Int) in
                var samples = 0
                let statistics = try receiver.run(duration: .seconds(3), audio: { samples += $0.count }, video: { _ in })
                return (statistics, samples)
            }

            let socket = try UDPSocket(bindTo: SocketAddress(host: "127.0.0.1", port: 0))
            func send(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try socket.send($0, to: target) } }
            let protector = try SRTPContext(keying: key, direction: .outbound)
            let encoder = try Opus.Encoder(configuration: Opus.Configuration())
            var tone = ToneGenerator(.sine(440))
            func packet(_ sequence: UInt16, payloadType: UInt8 = 111, ssrc: UInt32 = 42) throws -> [UInt8] {
                let header = RTPHeader(payloadType: payloadType, sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, ssrc: ssrc)
                let plain = try RTPPacket(header: header, payload: try encoder.encode(tone.nextFrame())).serialized()
                var buffer = plain + [UInt8](repeating: 0, count: SRTPContext.trailerCapacity)
                let length = try buffer.withUnsafeMutableBytes { try protector.protect($0, length: plain.count) }
                return Array(buffer[0..<length])
            }

            var good: [[UInt8]] = []
            // The sender's own lateness: a loaded machine oversleeps, and a packet that goes
            // out late is concealed for as long, which says nothing about bad datagrams.
            let clock = ContinuousClock()
            let start = clock.now
            var late = Duration.zero
            for sequence in UInt16(0)..<20 {
                late = max(late, clock.now - start - .milliseconds(20) * Int(sequence))
                let bytes = try packet(sequence)
                good.append(bytes)
                try send(bytes)
                switch sequence {
                case 2: try send([])                                             // empty datagram
                case 3: try send([0x00, 0x01, 0x00, 0x00] + [UInt8](repeating: 0x21, count: 16))  // a STUN binding request
                case 4: try send((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 91) })          // random bytes
                case 5: try send([0x80, 0x6F, 0x00])                             // RTP cut after 3 bytes
                case 6: try send(bytes)                                          // replay
                case 7:                                                          // one flipped bit
                    var tampered = try packet(500)
                    tampered[20] ^= 0x01
                    try send(tampered)
                case 8: try send(try packet(600, payloadType: 100))             // payload type not in the SDP
                case 9: try send([0x8F, 0x6F] + [UInt8](repeating: 0, count: 6) + [0, 0, 0, 42] + [0, 0, 0, 0])  // 15 CSRCs announced, none there
                case 10: try send(try packet(700, ssrc: 43))                     // an SSRC the SDP does not name
                default: break
                }
                // Real time, so the jitter buffer need not speed up; by deadline, so sleeps do not drift.
                try await Task.sleep(until: start + .milliseconds(20) * (Int(sequence) + 1), clock: clock)
            }
            let (statistics, samples) = try receiving.wait()
            let audio = statistics.streams[0]
            // All 20 frames play; the jitter buffer adds lead-in silence and at most three
            // concealed frames before the idle stream stops playing (plus what the sender's
            // own lateness cost, in whole frames).
            #expect(samples >= 20 * 960)
            #expect(audio.totalSamplesReceived - audio.concealedSamples >= 20 * 960)
            let lateFrames = Int((late / .milliseconds(20)).rounded(.down))
            #expect(audio.concealedSamples <= (3 + lateFrames) * 960, "sender late by \(late) at most")
            #expect(audio.replays == 1)
            #expect(audio.authenticationFailures == 1, "the tampered packet")
            #expect(audio.malformedPackets == 1, "the CSRC count past the end")
            #expect(statistics.unknownStreamPackets == 3, "unknown payload type, unknown SSRC, the packet cut short")
            #expect(statistics.unknownDatagrams >= 3, "empty, STUN and random bytes")
            #expect(audio.packetsLost == 0)
        }
    }

    @Test func unusableSDPsAreTypedErrorsNamingTheSection() async throws {
        try await Heavy.run {
            let key = SRTPKeyingMaterial.random().base64
            let longKey = Data((0..<46).map { UInt8($0) }).base64EncodedString()
            let cases: [(String, String)] = [
                ("m=audio 5004 RTP/AVP 0\r\n", "offers no opus payload type"),
                ("m=video 5004 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\n", "offers no VP8 payload type"),
                ("m=audio 5004 RTP/SAVP 97\r\na=rtpmap:97 opus/48000/2\r\n", "has no a=crypto key"),
                ("m=audio 5004 RTP/AVP 97\r\na=rtpmap:97 opus/48000/2\r\na=crypto:1 AES_256_CM_HMAC_SHA1_80 inline:\(longKey)\r\n",
                 "crypto suite AES_256_CM_HMAC_SHA1_80 is not supported"),
                ("m=application 5004 UDP/BFCP *\r\n", "no audio or video section"),
            ]
            for (media, message) in cases {
                let text = "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" + media
                let description = try SessionDescription(parsing: text)
                let error = #expect(throws: SDPError.self, "\(media)") { try MediaReceiver.plan(for: description) }
                #expect(error?.message.contains(message) == true, "\(String(describing: error))")
                #expect(error?.message.contains(key) == false)
            }
        }
    }
}
