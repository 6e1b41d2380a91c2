@testable import MediaEngine
@testable import MediaRouting
@testable import MediaSimulation

/// A meeting through a `ForwardingRouter` in virtual time: each participant is a
/// `MediaCore` (as a session drives it) that sends a tone (Opus, 20 ms, with RFC 6464
/// levels) and optionally a test pattern (VP8, 30 fps, temporal layers as configured),
/// over its own simulated uplink and downlink, and decodes every other participant.
final class MeetingCoreHarness {
    /// A participant that is a WebRTC peer: DTLS-SRTP keys (it is the DTLS client, the
    /// router's leg the server, as the server's answer to an `actpass` offer says), payload types and
    /// header extension IDs of its own, a MID stamped on what it sends.
    struct WebRTCPeer {
        var media = ForwardingRouter.LegSetup.Media(
            audioPayloadType: 109, videoPayloadType: 120,
            extensions: RTPExtensionMap(ids: [RTPExtensionMap.audioLevelURI: 5, RTPExtensionMap.transportSequenceNumberURI: 7,
                                              RTPExtensionMap.midURI: 9, RTPExtensionMap.ridURI: 11]))
        var certificate = MeetingCoreHarness.peerCertificate
        /// The fingerprints the router's leg is told (the peer's SDP): another
        /// certificate's to make the handshake fail.
        var announced = MeetingCoreHarness.peerCertificate.fingerprint
        /// False: the peer checks and sends but never speaks DTLS (the handshake never ends).
        var speaksDTLS = true
    }

    static let peerCertificate = try! DTLSCertificate(commonName: "peer")
    static let otherCertificate = try! DTLSCertificate(commonName: "other")
    static let serverCertificate = try! DTLSCertificate(commonName: "sfu")

    /// One simulcast layer a participant publishes: its size and bitrate (b/s).
    struct SimulcastLayer {
        var width: Int
        var height: Int
        var bitrate: Int
    }

    final class Participant {
        let name: String
        let index: Int
        let core: MediaCore
        let address: SocketAddress
        let leg: UInt64
        let audioOut: SendStreamID
        let videoOut: SendStreamID?
        let media: ForwardingRouter.LegSetup.Media
        let isWebRTC: Bool
        var sends: Bool
        var tone: ToneGenerator
        let opus: Opus.Encoder
        let vp8: VP8.Encoder?
        var pattern = TestPattern(width: 320, height: 240)
        var picture = VideoFrame(width: 320, height: 240)
        var encoded = [UInt8](repeating: 0, count: 400_000)
        /// A simulcast publisher's layers, lowest first: each its own encoder, stream and
        /// picture (downscaled from the top one), all on one media clock.
        var simulcast: [(encoder: VP8.Encoder, stream: SendStreamID, picture: VideoFrame, ssrc: UInt32)] = []
        /// Simulcast layers it stops sending (as a browser's encoder drops a layer, or as
        /// told by the server); each starts again with a keyframe.
        var stoppedLayers: Set<Int> = []
        private var wasStopped: Set<Int> = []
        var audioFrame = AudioFrame(layout: .mono, samplesPerChannel: 960)
        var uplink: ImpairmentModel
        var downlink: ImpairmentModel
        /// What arrived of each other participant: decoded audio, and video decoding.
        var audioFrom: [ReceiveStreamID: String] = [:]
        var videoFrom: [ReceiveStreamID: String] = [:]
        var decoders: [ReceiveStreamID: VP8.Decoder] = [:]
        var heard: [String: [Int16]] = [:]
        var framesDecoded: [String: Int] = [:]
        var lastPicture: [String: VideoFrame] = [:]
        /// When each publisher's frames were decoded.
        var decodedAt: [String: [Duration]] = [:]
        var connected = false
        var dtlsFailed = false
        var audioIndex = 0
        var videoIndex = 0

        init(name: String, index: Int, core: MediaCore, leg: UInt64, frequency: Double, video: Bool, temporalLayers: Int,
             simulcast layers: [SimulcastLayer] = [],
             webRTC: WebRTCPeer?, rtx: UInt8?, uplink: ImpairmentSettings, downlink: ImpairmentSettings) throws {
            self.name = name
            self.index = index
            self.core = core
            self.leg = leg
            var media = webRTC?.media ?? .engine
            media.videoRTXPayloadType = rtx
            self.media = media
            isWebRTC = webRTC != nil
            address = SocketAddress(addressBytes: [198, 51, 100, UInt8(index + 1)], port: 5_000)!
            var audio = SendStreamConfiguration(kind: .audio, ssrc: UInt32(index + 1) << 8 | 1, payloadType: media.audioPayloadType,
                                                clockRate: 48_000)
            var pictures = SendStreamConfiguration(kind: .video, ssrc: UInt32(index + 1) << 8 | 2, payloadType: media.videoPayloadType,
                                                   clockRate: VP8.clockRate)
            if webRTC != nil {
                audio.mid = "a"
                pictures.mid = "v"
            }
            audioOut = try core.addSendStream(audio)
            if video && !layers.isEmpty {
                // One media clock for every layer, as a simulcast encoder's.
                pictures.timestampOffset = UInt32(index + 1) &* 0x0100_0193
                for (number, layer) in layers.enumerated() {
                    var stream = pictures
                    stream.ssrc = UInt32(index + 1) << 8 | 2 | UInt32(number) << 4
                    if webRTC != nil {
                        // A browser's layers: SSRCs it announces nowhere, stamped with the
                        // section's MID and their RIDs, each on its own random clock.
                        stream.ssrc |= 0x40
                        stream.rid = Self.rids[number]
                        stream.timestampOffset = pictures.timestampOffset.map { $0 &+ UInt32(number) &* 0x2345_6789 }
                    }
                    var settings = VP8.Configuration(width: layer.width, height: layer.height, bitrate: layer.bitrate)
                    settings.temporalLayers = temporalLayers
                    simulcast.append((try VP8.Encoder(configuration: settings), try core.addSendStream(stream),
                                      VideoFrame(width: layer.width, height: layer.height), stream.ssrc))
                }
                pattern = TestPattern(width: layers[layers.count - 1].width, height: layers[layers.count - 1].height)
                picture = VideoFrame(width: pattern.width, height: pattern.height)
            }
            videoOut = video ? try (simulcast.first?.stream ?? core.addSendStream(pictures)) : nil
            sends = true
            tone = ToneGenerator(.sine(frequency), amplitude: 0.3)
            opus = try Opus.Encoder(configuration: Opus.Configuration())
            var settings = VP8.Configuration(width: 320, height: 240, bitrate: 300_000)
            settings.temporalLayers = temporalLayers
            vp8 = video ? try VP8.Encoder(configuration: settings) : nil
            self.uplink = try ImpairmentModel(settings: uplink)
            self.downlink = try ImpairmentModel(settings: downlink)
        }

        /// A WebRTC simulcast publisher's RIDs, lowest first.
        static let rids = ["q", "h", "f"]

        var audioSSRC: UInt32 { UInt32(index + 1) << 8 | 1 }
        var videoSSRC: UInt32? { videoOut == nil ? nil : UInt32(index + 1) << 8 | 2 }

        func sendAudio(now: Duration) throws {
            audioFrame.samples.withUnsafeMutableBufferPointer { tone.fill($0) }
            let level = audioFrame.samples.withUnsafeBufferPointer { AudioLevel(samples: $0) }
            var packet = [UInt8](repeating: 0, count: 1_500)
            let size = try audioFrame.samples.withUnsafeBufferPointer { pcm in
                try packet.withUnsafeMutableBytes { try opus.encode(pcm, into: $0) }
            }
            packet.withUnsafeBytes {
                _ = core.sendAudio(audioOut, payload: UnsafeRawBufferPointer(rebasing: $0[0..<size]),
                                   mediaTimestamp: UInt32(truncatingIfNeeded: audioIndex * 960), audioLevel: level, now: now)
            }
            audioIndex += 1
        }

        func sendVideo(now: Duration) throws {
            guard simulcast.isEmpty else { return try sendSimulcast(now: now) }
            guard let vp8, let videoOut else { return }
            pattern.render(into: &picture)
            let force = core.shouldForceKeyframe(videoOut, now: now)
            guard let info = try encoded.withUnsafeMutableBytes({ try vp8.encode(picture, forceKeyframe: force, into: $0) }) else { return }
            encoded.withUnsafeBytes {
                _ = core.sendVideo(videoOut, frame: UnsafeRawBufferPointer(rebasing: $0[0..<info.byteCount]),
                                   mediaTimestamp: UInt32(truncatingIfNeeded: videoIndex * 3_000), isKeyframe: info.isKeyframe,
                                   temporalLayer: vp8.configuration.temporalLayers > 1 ? (info.temporalLayer, info.layerSync) : nil, now: now)
            }
            videoIndex += 1
        }

        private func sendSimulcast(now: Duration) throws {
            pattern.render(into: &picture)
            for index in simulcast.indices where !stoppedLayers.contains(index) {
                if index == simulcast.count - 1 {
                    simulcast[index].picture = picture
                } else {
                    picture.scale(into: &simulcast[index].picture)
                }
                let layer = simulcast[index]
                let force = core.shouldForceKeyframe(layer.stream, now: now) || wasStopped.contains(index)
                guard let info = try encoded.withUnsafeMutableBytes({ try layer.encoder.encode(layer.picture, forceKeyframe: force, into: $0) })
                else { continue }
                encoded.withUnsafeBytes {
                    _ = core.sendVideo(layer.stream, frame: UnsafeRawBufferPointer(rebasing: $0[0..<info.byteCount]),
                                       mediaTimestamp: UInt32(truncatingIfNeeded: videoIndex * 3_000), isKeyframe: info.isKeyframe,
                                       temporalLayer: layer.encoder.configuration.temporalLayers > 1 ? (info.temporalLayer, info.layerSync) : nil,
                                       now: now)
                }
            }
            wasStopped = stoppedLayers
            videoIndex += 1
        }

        func handleEvents(now: Duration) {
            while let event = core.pollEvent() {
                switch event {
                case .videoFrame(let id, let frame):
                    guard let owner = videoFrom[id], let decoder = decoders[id] else { continue }
                    var decoded = lastPicture[owner] ?? VideoFrame(width: 2, height: 2)
                    do {
                        if try frame.data.withUnsafeBytes({ try decoder.decode($0, into: &decoded) }) {
                            framesDecoded[owner, default: 0] += 1
                            lastPicture[owner] = decoded
                            decodedAt[owner, default: []].append(now)
                            core.videoDecoded(id, timestamp: frame.timestamp, isKeyframe: frame.isKeyframe, shownAt: now)
                        }
                    } catch {
                        core.decoderReportedCorruption(id, now: now)
                    }
                case .connected: connected = connected || !isWebRTC
                case .dtlsConnected: connected = true
                case .dtlsFailed: dtlsFailed = true
                default: break
                }
            }
        }

        func play(now: Duration) {
            var scratch = [Int16](repeating: 0, count: 5_760)
            scratch.withUnsafeMutableBufferPointer { buffer in
                core.playAudio(now: now, scratch: buffer, block: { id, pcm in
                    if let owner = audioFrom[id] { heard[owner, default: []].append(contentsOf: pcm) }
                }, tickEnded: { _ in })
            }
        }

        /// The level of `frequency` in what was heard of `user` over the last `seconds`.
        func level(of frequency: Double, from user: String, lastSeconds seconds: Double = 2) -> Double {
            let samples = heard[user] ?? []
            let count = min(samples.count, Int(seconds * 48_000))
            return samples[(samples.count - count)...].withUnsafeBufferPointer { AudioQuality.toneLevel($0, frequency: frequency) }
        }
    }

    /// One router per forwarding worker; `router` is the first (the only one by default).
    let routers: [ForwardingRouter]
    var router: ForwardingRouter { routers[0] }
    /// Packets and messages one worker hands another, delivered in order after each step.
    private var handoffs: [(to: Int, header: WorkerHandoff, bytes: [UInt8])] = []
    let serverAddress = SocketAddress(addressBytes: [203, 0, 113, 1], port: 3_478)!
    var participants: [Participant] = []
    var now: Duration = .zero
    private var pending = DeliveryHeap<(to: Int, from: SocketAddress, bytes: [UInt8])>()
    private var nextLeg: UInt64 = 1
    private let meeting: UInt64 = 77
    /// Seen at the server: datagrams that came from each participant's address.
    var datagramsAtServer: [Int: Int] = [:]

    /// - Parameter workers: Forwarding workers, each a router: participant N's leg is
    ///   worker N % workers's, and its datagrams are read by worker (N + 1) % workers (as
    ///   the kernel's choice of socket may be another's than the owner).
    init(configuration: ForwardingRouter.Configuration = ForwardingRouter.Configuration(), workers: Int = 1) {
        var settings = configuration
        settings.seed = 7
        settings.ntpEpoch = NTPTime.from(seconds: 1_700_000_000, nanoseconds: 0)
        routers = (0..<workers).map { ForwardingRouter(configuration: settings, worker: $0) }
        for router in routers {
            router.workerCount = workers
            router.handOff = { [unowned self] worker, header, bytes in handoffs.append((worker, header, Array(bytes))) }
        }
    }

    func owner(of participant: Participant) -> ForwardingRouter { routers[participant.index % routers.count] }
    func reader(of address: SocketAddress) -> ForwardingRouter {
        guard let index = participants.first(where: { $0.address == address })?.index else { return routers[0] }
        return routers[(index + 1) % routers.count]
    }

    /// Delivers what workers handed each other, and their messages, until none is left.
    private func pump() {
        guard routers.count > 1 else { return }
        var progress = true
        while progress {
            progress = false
            for router in routers {
                while let (worker, message) = router.pollWorkerMessage() {
                    routers[worker].handleWorkerMessage(message, now: now)
                    progress = true
                }
            }
            while !handoffs.isEmpty {
                let handoff = handoffs.removeFirst()
                var bytes = handoff.bytes
                bytes.withUnsafeMutableBytes { routers[handoff.to].handleHandoff(handoff.header, $0, now: now) }
                progress = true
            }
        }
    }

    /// A participant joins: its leg opens, it checks the server, and it and everyone there
    /// subscribe to each other.
    @discardableResult
    /// - Parameter rtx: The RTX payload type the participant takes its videos' retransmissions
    ///   on (RFC 4588); nil: plain retransmissions.
    /// - Parameter simulcast: The layers of a simulcast video, lowest first (`video` must be set).
    func join(_ name: String, frequency: Double, publishing: Bool = true, video: Bool = false, temporalLayers: Int = 1,
              simulcast: [SimulcastLayer] = [], webRTC: WebRTCPeer? = nil, rtx: UInt8? = nil,
              uplink: ImpairmentSettings = ImpairmentSettings(), downlink: ImpairmentSettings = ImpairmentSettings()) throws -> Participant {
        let index = participants.count
        let clientKey = try Self.clientKey(index)
        let serverKey = try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: (0..<28).map { UInt8(200 - index * 17 + $0) })
        var settings = MediaCore.Configuration()
        if let webRTC {
            settings.extensions = webRTC.media.extensions
        } else {
            settings.outboundKeying = clientKey
            settings.inboundKeying = serverKey
        }
        settings.rtcpSSRC = UInt32(index + 1) << 8 | 0x80
        settings.seed = UInt64(index + 10)
        settings.ntpEpoch = NTPTime.from(seconds: 1_700_000_000 + Int64(index), nanoseconds: 0)
        var up = uplink
        up.delay = max(up.delay, .milliseconds(10))
        up.seed = UInt64(index * 2 + 1)
        var down = downlink
        down.delay = max(down.delay, .milliseconds(10))
        down.seed = UInt64(index * 2 + 2)
        let leg = nextLeg
        nextLeg += 1
        let participant = try Participant(name: name, index: index, core: try MediaCore(configuration: settings), leg: leg,
                                          frequency: frequency, video: video, temporalLayers: temporalLayers, simulcast: simulcast,
                                          webRTC: webRTC,
                                          rtx: rtx, uplink: up, downlink: down)
        participant.sends = publishing
        let serverICE = ICECredentials(ufrag: "leg\(leg)", password: "leg-password-\(leg)-0123456789ab")
        let clientICE = ICECredentials(ufrag: "client\(leg)", password: "client-password-\(leg)-012345")
        var keying = ForwardingRouter.LegSetup.Keying.sdes(inbound: clientKey, outbound: serverKey)
        if let webRTC {
            if webRTC.speaksDTLS {
                try participant.core.useDTLS(role: .client, certificate: webRTC.certificate,
                                             remoteFingerprints: [Self.serverCertificate.fingerprint], now: now)
            }
            keying = .dtls(role: .server, certificate: Self.serverCertificate, remoteFingerprints: [webRTC.announced])
        }
        var setup = ForwardingRouter.LegSetup(id: leg, meeting: meeting, account: name, publishing: publishing,
                                              audioSSRC: participant.audioSSRC, videoSSRC: participant.videoSSRC,
                                              keying: keying, media: participant.media, ice: serverICE)
        if webRTC != nil, !participant.simulcast.isEmpty {
            // Subscribers get it as `videoSSRC`, which it never sends.
            setup.videoRIDs = .init(mid: "v", rids: Array(Participant.rids.prefix(participant.simulcast.count)))
        } else {
            setup.videoLayers = participant.simulcast.map {
                ForwardingRouter.LegSetup.VideoLayer(ssrc: $0.ssrc, width: $0.picture.width, height: $0.picture.height)
            }
        }
        let ownerIndex = index % routers.count
        try routers[ownerIndex].addLeg(setup, now: now)
        for (worker, other) in routers.enumerated() where worker != ownerIndex { other.addRemoteLeg(setup, worker: ownerIndex, now: now) }
        let host = ICECandidate.local(.host, address: participant.address, localPreference: 65_535)
        participant.core.startICE(local: clientICE, controlling: true, hosts: [host], stunServers: [], timeout: .seconds(5), now: now)
        participant.core.setRemoteICE(serverICE, candidates: [ICECandidate.local(.host, address: serverAddress, localPreference: 65_535)],
                                      complete: true, now: now)
        for other in participants {
            owner(of: other).setForwarding(subscriber: other.leg, publisher: leg, audio: true, video: true, now: now)
            owner(of: participant).setForwarding(subscriber: leg, publisher: other.leg, audio: true, video: true, now: now)
            try subscribe(participant, to: other)
            try subscribe(other, to: participant)
        }
        participants.append(participant)
        pump()
        flush()
        return participant
    }

    /// The key participant `index` (not a WebRTC peer) protects what it sends with.
    static func clientKey(_ index: Int) throws -> SRTPKeyingMaterial {
        try SRTPKeyingMaterial(profile: .aeadAES128GCM, bytes: (0..<28).map { UInt8(index * 31 + $0) })
    }

    private func subscribe(_ subscriber: Participant, to publisher: Participant) throws {
        var audio = ReceiveStreamConfiguration(kind: .audio, payloadType: subscriber.media.audioPayloadType, clockRate: 48_000,
                                               ssrc: publisher.audioSSRC)
        audio.participant = publisher.name
        subscriber.audioFrom[try subscriber.core.addReceiveStream(audio)] = publisher.name
        if let ssrc = publisher.videoSSRC {
            var video = ReceiveStreamConfiguration(kind: .video, payloadType: subscriber.media.videoPayloadType,
                                                   clockRate: VP8.clockRate, ssrc: ssrc)
            video.participant = publisher.name
            if let rtx = subscriber.media.videoRTXPayloadType { video.rtx = RTXStream(ssrc: RTXStream.ssrc(forVideo: ssrc), payloadType: rtx) }
            let id = try subscriber.core.addReceiveStream(video)
            subscriber.videoFrom[id] = publisher.name
            subscriber.decoders[id] = try VP8.Decoder()
        }
    }

    /// A participant leaves: its leg closes; the others stop receiving it.
    func leave(_ participant: Participant) {
        for router in routers {
            if router === owner(of: participant) { router.removeLeg(participant.leg, now: now) } else { router.removeRemoteLeg(participant.leg, now: now) }
        }
        pump()
        participants.removeAll { $0 === participant }
    }

    private func flush() {
        pump()
        for participant in participants {
            while let transmit = participant.core.pollTransmit() {
                guard transmit.destination == serverAddress else { continue }
                if case .delivered(let at, _) = participant.uplink.process(size: transmit.bytes.count, now: now) {
                    pending.insert((-1, participant.address, Array(transmit.bytes)), due: at)
                }
            }
        }
        for router in routers {
            router.drainTransmits { transmit in
                guard let target = participants.first(where: { $0.address == transmit.destination }) else { return }
                if case .delivered(let at, _) = target.downlink.process(size: transmit.bytes.count, now: now) {
                    pending.insert((target.index, serverAddress, Array(transmit.bytes)), due: at)
                }
            }
        }
    }

    /// Injects a datagram at the server as if from `source`.
    func inject(_ bytes: [UInt8], from source: SocketAddress) {
        var copy = bytes
        copy.withUnsafeMutableBytes { reader(of: source).handleDatagram($0, from: source, now: now) }
        flush()
    }

    /// Runs the meeting until `end`.
    func run(until end: Duration) throws {
        let videoPeriod = Duration.seconds(1) / 30
        var previous = now - .seconds(1)
        var stalls = 0
        while now < end {
            var next = end
            for participant in participants where participant.sends {
                next = min(next, Duration.milliseconds(20) * participant.audioIndex)
                if participant.vp8 != nil { next = min(next, videoPeriod * participant.videoIndex) }
            }
            for participant in participants {
                if let timeout = participant.core.nextTimeout { next = min(next, timeout) }
            }
            for router in routers { if let timeout = router.nextTimeout { next = min(next, timeout) } }
            if let due = pending.nextDue { next = min(next, due) }
            now = max(now, next)
            // Something that keeps asking for `now` without progress must not hang the test.
            stalls = now == previous ? stalls + 1 : 0
            precondition(stalls < 1_000, "something asks for \(now) again and again")
            previous = now
            while let (datagram, _) = pending.popDue(now: now) {
                var bytes = datagram.bytes
                if datagram.to < 0 {
                    if let index = participants.first(where: { $0.address == datagram.from })?.index {
                        datagramsAtServer[index, default: 0] += 1
                    }
                    bytes.withUnsafeMutableBytes { reader(of: datagram.from).handleDatagram($0, from: datagram.from, now: now) }
                    pump()
                } else if let participant = participants.first(where: { $0.index == datagram.to }) {
                    _ = bytes.withUnsafeMutableBytes { participant.core.handleDatagram($0, from: datagram.from, now: now) }
                }
            }
            for router in routers { router.handleTimeout(now: now) }
            pump()
            for participant in participants {
                if participant.sends && participant.connected {
                    if Duration.milliseconds(20) * participant.audioIndex <= now { try participant.sendAudio(now: now) }
                    if participant.vp8 != nil && videoPeriod * participant.videoIndex <= now { try participant.sendVideo(now: now) }
                } else {
                    // Not sending: keep the media clocks moving so sending can start on time.
                    while Duration.milliseconds(20) * participant.audioIndex <= now { participant.audioIndex += 1 }
                    while videoPeriod * participant.videoIndex <= now { participant.videoIndex += 1 }
                }
                participant.core.handleTimeout(now: now)
                participant.handleEvents(now: now)
                participant.play(now: now)
            }
            flush()
            if next == end && now >= end { break }
        }
    }
}
