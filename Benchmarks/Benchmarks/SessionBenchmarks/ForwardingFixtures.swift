import Benchmark
import BenchmarkSupport
import MediaEngine
import MediaRouting
import SRTPBaseline
import SRTPFixtures

/// A publisher's packets, made ahead by a media core under the publisher's key
/// (AEAD_AES_128_GCM, as meeting legs use) and replayed into a forwarder one by one; a
/// fresh batch is made between samples, outside the measured window, since SRTP takes
/// each packet once. Video is 1 Mb/s-sized VP8 frames (about 1,100-byte packets, a
/// keyframe first), audio 100-byte Opus payloads.
final class PublisherPackets {
    static let key = key(of: 0)
    static let audioSSRC: UInt32 = 0x0A0D_10
    static let videoSSRC: UInt32 = 0x0B1D_E0
    static let batch = 1_200

    /// Publisher `publisher`'s key (0: the one publisher's of most fixtures).
    static func key(of publisher: Int) -> SRTPKeyingMaterial {
        try! SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: pseudoRandomBytes(count: 28, seed: 0xC3 + UInt32(publisher) * 0x101))
    }

    let video: Bool
    let audioSSRC: UInt32
    let videoSSRC: UInt32
    private let core: MediaCore
    private let stream: SendStreamID
    private let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: batch * 1_600, alignment: 16)
    private var lengths = [Int](repeating: 0, count: batch)
    private var count = 0
    private var next = 0
    private var frames = 0
    private var now: Duration = .zero
    private let frame: [UInt8]
    private let audio = pseudoRandomBytes(count: 100, seed: 0xA0)
    private let arrival = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 16)

    /// - Parameter publisher: Which publisher's (its own key and SSRCs; 0 for one alone).
    init(video: Bool, destination: SocketAddress, publisher: Int = 0) throws {
        self.video = video
        audioSSRC = Self.audioSSRC + UInt32(publisher) * 0x100
        videoSSRC = Self.videoSSRC + UInt32(publisher) * 0x100
        var settings = MediaCore.Configuration()
        settings.outboundKeying = Self.key(of: publisher)
        settings.rtcpSSRC = 0xC0 + UInt32(publisher)
        settings.seed = 3
        settings.transmitCapacity = 64
        core = try MediaCore(configuration: settings)
        core.selectPath(destination, pinned: true, now: .zero)
        stream = try core.addSendStream(video ? .vp8(ssrc: videoSSRC) : .opus(ssrc: audioSSRC))
        // A frame that splits into 3 packets of about 1,100 bytes; byte 0 bit 0 says delta.
        var bytes = pseudoRandomBytes(count: 3_300, seed: 0xF0)
        bytes[0] |= 0x01
        frame = bytes
        refill()
    }

    deinit {
        storage.deallocate()
        arrival.deallocate()
    }

    /// Makes the next batch of packets.
    func refill() {
        count = 0
        next = 0
        while count < Self.batch {
            if video {
                var bytes = frame
                if frames == 0 { bytes[0] &= 0xFE }
                bytes.withUnsafeBytes {
                    _ = core.sendVideo(stream, frame: $0, mediaTimestamp: UInt32(truncatingIfNeeded: frames * 3_000), isKeyframe: frames == 0,
                                       now: now)
                }
                now += .microseconds(33_333)
            } else {
                audio.withUnsafeBytes {
                    _ = core.sendAudio(stream, payload: $0, mediaTimestamp: UInt32(truncatingIfNeeded: frames * 960),
                                       audioLevel: AudioLevel(level: 30, voiceActivity: true), now: now)
                }
                now += .milliseconds(20)
            }
            frames += 1
            while let transmit = core.pollTransmit() {
                guard transmit.kind == .rtp, count < Self.batch else { continue }
                UnsafeMutableRawBufferPointer(rebasing: storage[(count * 1_600)..<(count * 1_600 + transmit.bytes.count)])
                    .copyMemory(from: transmit.bytes)
                lengths[count] = transmit.bytes.count
                count += 1
            }
        }
    }

    /// The next packet (valid until the next `refill`).
    @inline(__always)
    func take() -> UnsafeRawBufferPointer {
        defer { next += 1 }
        let index = next % count
        return UnsafeRawBufferPointer(rebasing: storage[(index * 1_600)..<(index * 1_600 + lengths[index])])
    }

    /// Hands the next packet to `router` as a socket read would: copied into a receive
    /// buffer of its own (the router decrypts in place).
    @inline(__always)
    func handNext(to router: ForwardingRouter, from source: SocketAddress, now: Duration) {
        let packet = take()
        let buffer = UnsafeMutableRawBufferPointer(rebasing: arrival[0..<packet.count])
        buffer.copyMemory(from: packet)
        router.handleDatagram(buffer, from: source, now: now)
    }

    /// Packets of the batch not taken yet (SRTP takes each once).
    var remaining: Int { count - next }

    /// The mean SRTP size of a batch.
    var meanSize: Int { lengths.prefix(count).reduce(0, +) / max(1, count) }
}

/// The engine's forwarding path per packet: a publisher's SRTP packet into a
/// `ForwardingRouter` (leg lookup by address, SRTP once, statistics, TWCC, VP8 descriptor
/// and layer decision), forwarded to every subscriber leg (renumbered, TWCC renumbered,
/// protected with the leg's key, into its retransmission history), and every datagram
/// taken out of the legs' queues, as the forwarding thread hands them to `sendmmsg`.
final class RouterForwardingPath {
    static let server = SocketAddress(addressBytes: [203, 0, 113, 1], port: 3_478)!
    let router = ForwardingRouter(configuration: {
        var settings = ForwardingRouter.Configuration()
        settings.seed = 9
        return settings
    }())
    let packets: PublisherPackets
    private let publisherAddress = SocketAddress(addressBytes: [198, 51, 100, 1], port: 5_000)!
    private(set) var datagramsOut = 0
    private(set) var bytesOut = 0
    private var now: Duration = .zero

    /// How a browser's offer maps things (Chromium's: Opus 111, VP8 96 but audio level 1,
    /// transport-wide sequence 3, MID 4 in another order than the engine's): what is
    /// forwarded to such a leg gets its payload type and IDs rewritten.
    static let browser = ForwardingRouter.LegSetup.Media(
        audioPayloadType: 109, videoPayloadType: 120,
        extensions: RTPExtensionMap(ids: [RTPExtensionMap.audioLevelURI: 5, RTPExtensionMap.transportSequenceNumberURI: 7,
                                          RTPExtensionMap.midURI: 9]))

    /// - Parameter browsers: The subscribers are WebRTC legs (their own payload types and
    ///   header extension IDs; keyed by DTLS in a real meeting, which changes nothing per
    ///   packet: the keys land in the same SRTP contexts).
    init(subscribers: Int, video: Bool, browsers: Bool = false) throws {
        packets = try PublisherPackets(video: video, destination: Self.server)
        var legs: [(UInt64, SocketAddress, ICECredentials)] = []
        for index in 0...subscribers {
            let id = UInt64(index + 1)
            let address = SocketAddress(addressBytes: [198, 51, 100, UInt8(index + 1)], port: 5_000)!
            let ice = ICECredentials(ufrag: "leg\(id)", password: "leg-password-\(id)-0123456789ab")
            let outbound = try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: pseudoRandomBytes(count: 28, seed: 0xD0 + UInt32(id)))
            let inbound = index == 0 ? PublisherPackets.key
                : try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: pseudoRandomBytes(count: 28, seed: 0xE0 + UInt32(id)))
            try router.addLeg(ForwardingRouter.LegSetup(id: id, meeting: 1, account: "user\(index)", publishing: index == 0,
                                                        audioSSRC: index == 0 ? PublisherPackets.audioSSRC : 0x1000 + UInt32(index),
                                                        videoSSRC: index == 0 ? PublisherPackets.videoSSRC : 0x2000 + UInt32(index),
                                                        keying: .sdes(inbound: inbound, outbound: outbound),
                                                        media: browsers && index > 0 ? Self.browser : .engine, ice: ice), now: .zero)
            legs.append((id, address, ice))
        }
        for (_, address, ice) in legs {
            // The participant's ICE check, signed for the leg's credentials (the server is ICE-lite).
            let check = STUNMessage(type: .bindingRequest, transactionID: .random(),
                                    attributes: [.username("\(ice.ufrag):participant"), .priority(1_000), .iceControlling(1), .useCandidate])
            var bytes = check.serialized(integrity: try .shortTerm(password: ice.password), fingerprint: true)
            bytes.withUnsafeMutableBytes { router.handleDatagram($0, from: address, now: .zero) }
        }
        router.drainTransmits { _ in }
        for (id, _, _) in legs.dropFirst() {
            router.setForwarding(subscriber: id, publisher: 1, audio: true, video: true, now: .zero)
        }
        router.drainTransmits { _ in }
    }

    @inline(__always)
    func forwardNext() {
        packets.handNext(to: router, from: publisherAddress, now: now)
        router.drainTransmits { transmit in
            datagramsOut += 1
            bytesOut += transmit.bytes.count
        }
        now += .microseconds(500)
    }
}

/// The same job in plain C (SRTPBaseline's `baseline_srtp_forward`): copy the packet in,
/// unprotect it once, copy and protect it for each subscriber, with libsrtp configured as
/// the engine configures it.
final class BaselineForwardingPath: @unchecked Sendable {
    // @unchecked: WorkerScaling hands one to its second thread, which alone uses it during a run.
    let packets: PublisherPackets
    private let inbound: OpaquePointer
    private let outbound: [OpaquePointer?]
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 2_048)
    private let outputs: UnsafeMutablePointer<UInt8>
    private(set) var bytesOut = 0

    init(subscribers: Int, video: Bool) throws {
        packets = try PublisherPackets(video: video, destination: RouterForwardingPath.server)
        try initialiseLibSRTP()
        let key = PublisherPackets.key.bytes
        guard let inbound = baseline_srtp_create(BaselineSRTPProfileAEADAES128GCM, key, key.count, 0, 1_024) else {
            throw BenchmarkFailure("SRTP baseline: libsrtp refused the inbound session")
        }
        self.inbound = inbound
        outbound = try (0..<subscribers).map { index in
            let key = pseudoRandomBytes(count: 28, seed: 0xD0 + UInt32(index + 2))
            guard let session = baseline_srtp_create(BaselineSRTPProfileAEADAES128GCM, key, key.count, 1, 1_024) else {
                throw BenchmarkFailure("SRTP baseline: libsrtp refused an outbound session")
            }
            return session
        }
        outputs = .allocate(capacity: 2_048 * subscribers)
    }

    deinit {
        baseline_srtp_destroy(inbound)
        for session in outbound { baseline_srtp_destroy(session) }
        scratch.deallocate()
        outputs.deallocate()
    }

    @inline(__always)
    func forwardNext() throws {
        let packet = packets.take()
        let produced = outbound.withUnsafeBufferPointer { sessions in
            baseline_srtp_forward(inbound, sessions.baseAddress, Int32(sessions.count), packet.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                  packet.count, scratch, outputs, 2_048)
        }
        if produced < 0 { throw BenchmarkFailure("SRTP baseline: forwarding failed (\(produced))") }
        bytesOut += Int(produced)
    }
}

enum BrowserLegMetrics {
    static let engine = BenchmarkMetric.custom("our clients' legs (ns per 64 packets in)")
    static let browsers = BenchmarkMetric.custom("browser legs (ns per 64 packets in)")
    static let all = [engine, browsers]
}

/// The forwarding path to our clients' legs and to browser legs, interleaved: 64 packets
/// through one, then 64 through the other, each timed on this thread's CPU clock. This VM
/// runs for hundreds of samples at a time in one of two speeds; benchmarks run one after
/// the other compared speeds, not paths.
final class BrowserLegForwardingPair {
    static let run = 64
    let engine: RouterForwardingPath
    let browsers: RouterForwardingPath

    init(video: Bool) throws {
        engine = try RouterForwardingPath(subscribers: 3, video: video)
        browsers = try RouterForwardingPath(subscribers: 3, video: video, browsers: true)
        for path in [engine, browsers] {
            for _ in 0..<60 { path.forwardNext() }
            guard path.datagramsOut >= 150 else { throw BenchmarkFailure("SFU: \(path.datagramsOut) of 180 packets forwarded in setup") }
            path.packets.refill()
        }
    }

    func next(_ benchmark: Benchmark) {
        for (path, metric) in [(engine, BrowserLegMetrics.engine), (browsers, BrowserLegMetrics.browsers)] {
            if path.packets.remaining < Self.run { path.packets.refill() }
            let started = threadCPUNanoseconds()
            for _ in 0..<Self.run { path.forwardNext() }
            benchmark.measurement(metric, threadCPUNanoseconds() - started)
        }
    }
}
