@testable import MediaEngine
@testable import MediaSimulation

/// A two-party call between two media cores over a `VirtualLink`, in virtual time: each
/// side sends a tone (Opus, 20 ms) and a test pattern (VP8 at 30 fps) and decodes what
/// arrives, exactly as sessions do, but with no threads, sockets or sleeps.
struct CoreCallHarness {
    final class Side {
        let core: MediaCore
        let audioOut: SendStreamID
        let videoOut: SendStreamID?
        var audioIn: ReceiveStreamID!
        var videoIn: ReceiveStreamID?
        var tone: ToneGenerator
        var pattern: TestPattern
        let opus: Opus.Encoder
        let vp8: VP8.Encoder?
        let decoder = try! VP8.Decoder()
        var picture = VideoFrame(width: 320, height: 240)
        var encoded = [UInt8](repeating: 0, count: 200_000)
        var audioFrame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        var played: [Int16] = []
        var framesDecoded = 0
        var keyframesEncoded = 0
        var goodbyes: [ReceiveStreamID] = []
        var consentExpired = false
        var connected: SocketAddress?
        /// DTLS: the profile agreed and when, or why the handshake failed.
        var dtlsConnected: (profile: SRTPProfile, at: Duration)?
        var dtlsFailure: DTLSError?
        var audioIndex = 0
        var videoIndex = 0

        init(core: MediaCore, frequency: Double, video: Bool) throws {
            self.core = core
            audioOut = try core.addSendStream(.opus(ssrc: core.configuration.rtcpSSRC &+ 1))
            videoOut = video ? try core.addSendStream(.vp8(ssrc: core.configuration.rtcpSSRC &+ 2)) : nil
            tone = ToneGenerator(.sine(frequency))
            pattern = TestPattern(width: 320, height: 240)
            var settings = Opus.Configuration()
            settings.inbandFEC = true
            opus = try Opus.Encoder(configuration: settings)
            vp8 = video ? try VP8.Encoder(configuration: VP8.Configuration(width: 320, height: 240, bitrate: 400_000)) : nil
        }

        func sendAudio(now: Duration) throws {
            audioFrame.samples.withUnsafeMutableBufferPointer { tone.fill($0) }
            var packet = [UInt8](repeating: 0, count: 1_500)
            let size = try audioFrame.samples.withUnsafeBufferPointer { pcm in
                try packet.withUnsafeMutableBytes { try opus.encode(pcm, into: $0) }
            }
            packet.withUnsafeBytes {
                _ = core.sendAudio(audioOut, payload: UnsafeRawBufferPointer(rebasing: $0[0..<size]),
                                   mediaTimestamp: UInt32(truncatingIfNeeded: audioIndex * 960), now: now)
            }
            audioIndex += 1
        }

        func sendVideo(now: Duration) throws {
            guard let vp8, let videoOut else { return }
            pattern.render(into: &picture)
            let force = core.shouldForceKeyframe(videoOut, now: now)
            guard let info = try encoded.withUnsafeMutableBytes({ try vp8.encode(picture, forceKeyframe: force, into: $0) }) else { return }
            if info.isKeyframe { keyframesEncoded += 1 }
            encoded.withUnsafeBytes {
                _ = core.sendVideo(videoOut, frame: UnsafeRawBufferPointer(rebasing: $0[0..<info.byteCount]),
                                   mediaTimestamp: UInt32(truncatingIfNeeded: videoIndex * 3_000), isKeyframe: info.isKeyframe, now: now)
            }
            videoIndex += 1
        }

        func handleEvents(now: Duration) {
            var decoded = VideoFrame(width: 2, height: 2)
            while let event = core.pollEvent() {
                switch event {
                case .videoFrame(let id, let frame):
                    do {
                        if try frame.data.withUnsafeBytes({ try decoder.decode($0, into: &decoded) }) {
                            framesDecoded += 1
                            core.videoDecoded(id, timestamp: frame.timestamp, isKeyframe: frame.isKeyframe, shownAt: now)
                        }
                    } catch {
                        core.decoderReportedCorruption(id, now: now)
                    }
                case .goodbye(let id): goodbyes.append(id)
                case .consentExpired: consentExpired = true
                case .connected(let pair, _): connected = pair.remote.address
                case .dtlsConnected(let profile): dtlsConnected = (profile, now)
                case .dtlsFailed(let error): dtlsFailure = error
                default: break
                }
            }
        }

        func play(now: Duration) {
            var scratch = [Int16](repeating: 0, count: 5_760)
            scratch.withUnsafeMutableBufferPointer { buffer in
                core.playAudio(now: now, scratch: buffer, block: { _, pcm in played.append(contentsOf: pcm) }, tickEnded: { _ in })
            }
        }
    }

    var link: VirtualLink
    let alice: Side
    let bob: Side
    var now: Duration = .zero
    /// Stops each side's media from this time on (nil: never).
    var aliceStops: Duration?
    var bobStops: Duration?

    static let keyA = try! SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: (0..<30).map { UInt8($0) })
    static let keyB = try! SRTPKeyingMaterial(profile: .aesCM128HMACSHA1_80, bytes: (0..<30).map { UInt8(100 + $0) })
    static let aliceICE = ICECredentials(ufrag: "alice", password: "alice-password-0123456789")
    static let bobICE = ICECredentials(ufrag: "bobby", password: "bobby-password-0123456789")

    /// How the two sides key their media.
    enum Keying {
        /// Keys given up front (SDES): each protects with its own, reads the other's.
        case sdes
        /// A DTLS-SRTP handshake on the path: alice is the client (`a=setup:active`). Each
        /// side checks the other's certificate against the fingerprints given here (nil:
        /// the right one).
        case dtls(aliceExpects: [DTLSFingerprint]? = nil, bobExpects: [DTLSFingerprint]? = nil, timeout: Duration = .seconds(10))
    }

    static let aliceCertificate = try! DTLSCertificate(commonName: "alice")
    static let bobCertificate = try! DTLSCertificate(commonName: "bob")

    /// Two cores keyed as a call keys them, each receiving the other's streams by SSRC.
    init(video: Bool = true, link settings: ImpairmentSettings = ImpairmentSettings(), pinned: Bool = true,
         keying: Keying = .sdes) throws {
        var settings = settings
        if settings.delay == .zero { settings.delay = .milliseconds(20) }
        var a = MediaCore.Configuration()
        a.outboundKeying = Self.keyA
        a.inboundKeying = Self.keyB
        a.rtcpSSRC = 0x1000
        a.seed = 1
        a.ntpEpoch = NTPTime.from(seconds: 1_700_000_000, nanoseconds: 0)
        var b = a
        b.outboundKeying = Self.keyB
        b.inboundKeying = Self.keyA
        b.rtcpSSRC = 0x2000
        b.seed = 2
        b.ntpEpoch = NTPTime.from(seconds: 1_700_000_100, nanoseconds: 0)
        if case .dtls = keying {
            (a.outboundKeying, a.inboundKeying, b.outboundKeying, b.inboundKeying) = (nil, nil, nil, nil)
        }
        var back = settings
        back.seed = settings.seed &+ 1
        link = try VirtualLink(a: try MediaCore(configuration: a), b: try MediaCore(configuration: b), forward: settings, backward: back)
        link.a.localICE = Self.aliceICE
        link.b.localICE = Self.bobICE
        alice = try Side(core: link.a, frequency: 440, video: video)
        bob = try Side(core: link.b, frequency: 660, video: video)
        for (side, peer) in [(alice, bob), (bob, alice)] {
            side.audioIn = try side.core.addReceiveStream(.opus(ssrc: peer.core.configuration.rtcpSSRC &+ 1))
            if video { side.videoIn = try side.core.addReceiveStream(.vp8(ssrc: peer.core.configuration.rtcpSSRC &+ 2)) }
        }
        if case .dtls(let aliceExpects, let bobExpects, let timeout) = keying {
            try link.a.useDTLS(role: .client, certificate: Self.aliceCertificate,
                               remoteFingerprints: aliceExpects ?? [Self.bobCertificate.fingerprint], handshakeTimeout: timeout, now: .zero)
            try link.b.useDTLS(role: .server, certificate: Self.bobCertificate,
                               remoteFingerprints: bobExpects ?? [Self.aliceCertificate.fingerprint], handshakeTimeout: timeout, now: .zero)
        }
        link.a.selectPath(link.addressB, pinned: pinned, remoteICE: Self.bobICE, controlling: true, now: .zero)
        link.b.selectPath(link.addressA, pinned: pinned, remoteICE: Self.aliceICE, controlling: false, now: .zero)
    }

    /// Runs the call until `end`.
    mutating func run(until end: Duration) throws {
        let videoPeriod = Duration.seconds(1) / 30
        var previous = Duration.zero - .seconds(1)
        var stalls = 0
        while now < end {
            var next = end
            for side in [alice, bob] {
                let stops = side === alice ? aliceStops : bobStops
                if stops.map({ now < $0 }) ?? true {
                    next = min(next, Duration.milliseconds(20) * side.audioIndex)
                    if side.vp8 != nil { next = min(next, videoPeriod * side.videoIndex) }
                }
                if let timeout = side.core.nextTimeout { next = min(next, timeout) }
            }
            if let delivery = link.nextDelivery { next = min(next, delivery) }
            now = max(now, next)
            // Something that keeps asking for `now` without progress must not hang the test.
            stalls = now == previous ? stalls + 1 : 0
            precondition(stalls < 1_000, "the core asks for \(now) again and again")
            previous = now
            link.deliver(now: now)
            for side in [alice, bob] {
                let stops = side === alice ? aliceStops : bobStops
                let live = stops.map { now < $0 } ?? true
                if live && Duration.milliseconds(20) * side.audioIndex <= now { try side.sendAudio(now: now) }
                if live && side.vp8 != nil && videoPeriod * side.videoIndex <= now { try side.sendVideo(now: now) }
                side.core.handleTimeout(now: now)
                side.handleEvents(now: now)
                side.play(now: now)
            }
            link.flush(now: now)
            if next == end && now >= end { break }
        }
    }
}
