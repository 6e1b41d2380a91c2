import MediaSimulation
import Testing
import TestSupport
@testable import MediaEngine

/// DTLS-SRTP inside the media core's path (RFC 5763/5764, RFC 7983), two cores in virtual
/// time over a link with 20 ms each way: the handshake keys the media, and until it has,
/// nothing is sent or read.
@Suite struct DTLSCoreCalls {
    @Test func aCallKeyedByDTLSCarriesEachSidesToneAndPictures() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness(keying: .dtls())
            try call.run(until: .seconds(4))
            for (listener, expected) in [(call.alice, 660.0), (call.bob, 440.0)] {
                let agreed = try #require(listener.dtlsConnected, "\(listener.dtlsFailure.map { "\($0)" } ?? "no DTLS event")")
                #expect(agreed.profile == .aeadAES128GCM, "GCM is offered first")
                // Client hello, server flight, client flight, server finish: two round trips.
                #expect(agreed.at <= .milliseconds(100), "keys after \(agreed.at)")
                let heard = listener.played.dropFirst(24_000).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
                #expect(abs((heard ?? 0) - expected) < 2, "tone at \(heard ?? 0) Hz")
                #expect(listener.framesDecoded >= 100, "\(listener.framesDecoded) frames decoded")
                let audio = try #require(listener.core.statistics(of: listener.audioIn))
                #expect(audio.authenticationFailures == 0 && audio.packetsLost == 0)
                let transport = listener.core.transportStatistics
                #expect(transport.rtcpReceived > 10 && transport.rtcpAuthenticationFailures == 0)
                // Media made before the keys was held back, never sent plain.
                #expect(transport.packetsWithoutPath > 0 && transport.dtlsMalformed == 0 && transport.dtlsFromStrangers == 0)
                if case .connected = listener.core.dtlsState {} else { Issue.record("state \(String(describing: listener.core.dtlsState))") }
            }
        }
    }

    @Test func aCertificateMatchingNoFingerprintCarriesNoMedia() async throws {
        try await Heavy.run {
            let stranger = try DTLSCertificate(commonName: "mallory")
            var call = try CoreCallHarness(video: false, keying: .dtls(bobExpects: [stranger.fingerprint]))
            try call.run(until: .seconds(2))
            let failure = try #require(call.bob.dtlsFailure)
            #expect(failure.code == .fingerprintMismatch, "\(failure)")
            #expect(call.bob.dtlsConnected == nil)
            // Alice's keys came (she checked Bob's certificate), so she sends; Bob reads
            // none of it and sends nothing.
            let atBob = call.bob.core.transportStatistics
            #expect(atBob.mediaBeforeKeys > 50, "\(atBob.mediaBeforeKeys) packets dropped unread")
            #expect(call.bob.played.allSatisfy { $0 == 0 } && call.alice.played.allSatisfy { $0 == 0 })
            #expect(try #require(call.bob.core.statistics(of: call.bob.audioIn)).packetsReceived == 0)
            #expect(try #require(call.bob.core.statistics(of: call.bob.audioOut)).packetsSent == 0)
        }
    }

    @Test func garbageAndStrangersOnTheDTLSPathAreCountedAndTheCallGoesOn() async throws {
        try await Heavy.run {
            var call = try CoreCallHarness(video: false, keying: .dtls())
            try call.run(until: .seconds(1))
            let stranger = SocketAddress(addressBytes: [203, 0, 113, 9], port: 4_444)!
            // A handshake record header claiming more bytes than the datagram has, from the path.
            call.link.inject([22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 8) + [0x40, 0x00, 1, 2, 3], into: .a,
                             from: call.link.addressB, now: call.now)
            // Not a record at all (first byte 63 is still DTLS by RFC 7983).
            call.link.inject([63, 1, 2, 3], into: .a, from: call.link.addressB, now: call.now)
            // A well-formed ClientHello-like record from an address that is not the path.
            call.link.inject([22, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 8) + [0x00, 0x01, 1], into: .a, from: stranger, now: call.now)
            try call.run(until: .seconds(3))
            let transport = call.alice.core.transportStatistics
            #expect(transport.dtlsMalformed == 2 && transport.dtlsFromStrangers == 1, "\(transport)")
            let heard = call.alice.played.suffix(48_000).withUnsafeBufferPointer { AudioQuality.toneFrequency($0) }
            #expect(abs((heard ?? 0) - 660) < 2, "tone at \(heard ?? 0) Hz after the garbage")
        }
    }

    @Test func aHandshakeThatNeverFinishesFailsAtItsDeadlineAndNothingIsSent() async throws {
        try await Heavy.run {
            // Bob's answers never reach Alice: her flights go out (and again, on the timer),
            // nothing comes back.
            var call = try CoreCallHarness(video: false, keying: .dtls(timeout: .seconds(3)))
            var lost = ImpairmentSettings()
            lost.delay = .milliseconds(20)
            lost.lossPercent = 100
            try call.link.change(.b, to: lost)
            try call.run(until: .seconds(4))
            let failure = try #require(call.alice.dtlsFailure)
            #expect(failure.code == .timeout, "\(failure)")
            #expect(try #require(call.alice.core.statistics(of: call.alice.audioOut)).packetsSent == 0)
            #expect(call.alice.core.transportStatistics.packetsWithoutPath >= 150)
        }
    }

    @Test func plainRTPIsNotReadWhileTheKeysAreNotAgreed() throws {
        var configuration = MediaCore.Configuration()
        configuration.seed = 7
        let core = try MediaCore(configuration: configuration)
        let audio = try core.addReceiveStream(.opus(ssrc: 0xABCD))
        let peer = SocketAddress(addressBytes: [198, 51, 100, 2], port: 6_000)!
        try core.useDTLS(role: .server, certificate: CoreCallHarness.bobCertificate,
                         remoteFingerprints: [CoreCallHarness.aliceCertificate.fingerprint], now: .zero)
        core.selectPath(peer, pinned: true, now: .zero)
        var packet = try RTPPacket(header: RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 960, ssrc: 0xABCD),
                                   payload: [UInt8](repeating: 0xF8, count: 20)).serialized()
        _ = packet.withUnsafeMutableBytes { core.handleDatagram($0, from: peer, now: .milliseconds(5)) }
        #expect(core.transportStatistics.mediaBeforeKeys == 1)
        #expect(try #require(core.statistics(of: audio)).packetsReceived == 0)
        // As the server it waits for the ClientHello: it sent nothing.
        #expect(core.pollTransmit() == nil)
    }
}
