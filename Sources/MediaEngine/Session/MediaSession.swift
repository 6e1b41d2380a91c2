import Foundation
import Synchronization

/// The media of one call (or one meeting leg): this side's audio (and video) to the peer
/// and every remote participant's media back, over one UDP socket (bundle and rtcp-mux)
/// with SRTP and SRTCP both ways. Each side draws its own key and announces it with where
/// it listens (SDES-style, through signaling).
///
/// `start(remote:)` starts the receiving thread at once (it also answers the peer's STUN
/// checks), checks connectivity to the peer's candidates (the first answer selects and
/// pins the path and measures the first RTT; consent checks keep it alive, RFC 7675),
/// then the sending thread sends. The receiving thread drives the media core (jitter
/// buffers, frame assembly, feedback, reports), decodes video and mixes every
/// participant's audio into the one playback; the sending thread captures, encodes and
/// sends. Events come from both threads through the handler; keep it short.
public final class MediaSession: Sendable {
    /// What one side announces: its ICE candidates (where it may receive; more may trickle
    /// later), its SRTP key, the SSRCs it sends from, and its ICE credentials (its
    /// connectivity checks and consent are signed with them). Holds a key and a password:
    /// never print (`description` redacts both).
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var candidates: [ICECandidate]
        public var keying: SRTPKeyingMaterial
        public var audioSSRC: UInt32
        public var videoSSRC: UInt32?
        public var ice: ICECredentials
        /// A simulcast video's layers, lowest first (the first under `videoSSRC`); empty for
        /// one video stream.
        public var videoLayers: [SimulcastLayer] = []

        /// One layer of a simulcast video this side sends.
        public typealias SimulcastLayer = SimulcastStream

        public init(candidates: [ICECandidate], keying: SRTPKeyingMaterial, audioSSRC: UInt32, videoSSRC: UInt32?, ice: ICECredentials) {
            self.candidates = candidates
            self.keying = keying
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
            self.ice = ice
        }

        public var description: String { "Endpoint(\(candidates.map(\.description)), ufrag \(ice.ufrag), key and password redacted)" }
    }

    /// A remote participant whose media arrives over this session's transport: the peer
    /// of a call, or, on a meeting leg, each other member the server forwards.
    public struct Participant: Sendable, Hashable {
        /// The participant's name in events and statistics ("" is a call's peer).
        public var id: String
        public var audioSSRC: UInt32?
        public var videoSSRC: UInt32?

        public init(id: String, audioSSRC: UInt32?, videoSSRC: UInt32?) {
            self.id = id
            self.audioSSRC = audioSSRC
            self.videoSSRC = videoSSRC
        }
    }

    public struct Configuration {
        public var audio: any AudioSource
        public var video: (any VideoSource)?
        /// Where remote audio plays (nil: nowhere; `remoteAudio` still sees it).
        public var audioSink: (any AudioSink)?
        /// Address to bind; "0.0.0.0" offers every IPv4 interface as a candidate.
        public var host = "0.0.0.0"
        public var audioBitrate = 32_000
        public var videoBitrate = 800_000
        public var profile: SRTPProfile = .aesCM128HMACSHA1_80
        /// VP8 temporal layers (1 to 3); a meeting's forwarding server thins them per
        /// subscriber, so meeting legs send 3.
        public var temporalLayers = 1
        /// Simulcast: how many sizes the video is sent in (1 to 3), each half the one above
        /// (the full size at the top), to a forwarding server that sends each subscriber one
        /// (SDES sessions only: a WebRTC peer gets one stream). Sizes below 160 pixels wide
        /// are left out.
        public var simulcastLayers = 1
        /// The RTX payload type (RFC 4588) participants' videos are retransmitted on, each on
        /// `RTXStream.ssrc(forVideo:)` (a meeting's forwarding server does this for legs that
        /// ask); nil: plain retransmissions only.
        public var videoRTXPayloadType: UInt8?
        /// Longest wait for ICE to select a pair.
        public var connectTimeout: Duration = .seconds(10)
        /// STUN servers this side learns its server-reflexive candidates from (a signaling
        /// server's media port answers Binding requests).
        public var stunServers: [SocketAddress] = []
        /// A TURN server (with credentials) this side allocates a relayed candidate on, for
        /// when no direct path works (a symmetric NAT).
        public var turnServer: TURNClient.Configuration?
        /// Whether this side is ICE's controlling agent (it nominates): the caller and a
        /// meeting participant are; the callee is not.
        public var iceControlling = true
        /// Whether the peer is known to be on this host (the signaling server that introduced
        /// it was reached on a loopback address): its loopback candidates are checked too.
        /// Off, they are checked only when this side's own candidates are all loopback.
        public var peerOnThisHost = false
        /// No media from the peer for this long: `disconnected`.
        public var mediaTimeout: Duration = .seconds(10)
        /// Consent checks on the selected path (RFC 7675: every 5 s, expiry after 30 s).
        public var consent = ConsentFreshness.Configuration()
        /// The app's capture hooks (audio and video processing before encoding).
        public var captureHooks: CaptureHooks?
        /// Sees every block of the played remote audio (all participants mixed), on the
        /// receiving thread.
        public var remoteAudio: (@Sendable (UnsafeBufferPointer<Int16>) -> Void)?
        /// Sees every block of each participant's decoded audio, before the mix, on the
        /// receiving thread.
        public var participantAudio: (@Sendable (String, UnsafeBufferPointer<Int16>) -> Void)?
        /// Sees every decoded picture of each participant (its YUV callback), on the
        /// receiving thread, before the event; keep it short.
        public var remoteVideo: (@Sendable (String, VideoFrame) -> Void)?
        /// This side's SRTP key and audio SSRC when someone else drew them (a server's own
        /// leg, whose keys the signaling side handed out); nil: drawn here.
        public var localKeying: SRTPKeyingMaterial?
        public var localAudioSSRC: UInt32?
        /// The capture path's processing (echo cancellation, noise suppression, gain
        /// control, high-pass filter, voice detection); `setAudioProcessing` changes it
        /// during the call. Nil: everything on when `audio` is a microphone and
        /// `audioSink` a loudspeaker, off otherwise (files, tones, `--play file:`).
        public var audioProcessing: AudioProcessor.Settings?
        /// The library's rate: only tests of the library refusing to start change it.
        var audioProcessingSampleRate = AudioFrame.sampleRate

        public init(audio: any AudioSource, video: (any VideoSource)?) {
            self.audio = audio
            self.video = video
        }
    }

    public enum Event: Sendable {
        /// ICE selected a pair (host, srflx, prflx or relay); media flows over it. The round
        /// trip is its check's.
        case connected(ICECandidatePair, roundTripTime: Duration)
        /// ICE moved the media to a better pair that succeeded later.
        case pathChanged(ICECandidatePair)
        /// Gathering found another candidate of this side: send it to the peer (trickle).
        case localCandidate(ICECandidate)
        /// Gathering ended: tell the peer this side has no more candidates.
        case gatheringComplete
        /// No pair worked within `connectTimeout`.
        case connectFailed(String)
        /// DTLS agreed the SRTP keys with a WebRTC peer (with this profile): media flows.
        case dtlsConnected(SRTPProfile)
        /// The peer's media ended (BYE), stopped for `mediaTimeout`, or the peer stopped
        /// answering consent checks.
        case disconnected(String)
        /// Once a second: what arrived so far (each stream names its participant).
        case statistics(MediaReceiver.Statistics)
        /// A decoded picture of a participant.
        case remoteVideoFrame(VideoFrame, participant: String)
        case localVideoFrame(VideoFrame)
        /// Level of the audio being sent (after mute), 0...1 (RMS of full scale).
        case localAudioLevel(Double)
        /// Level of a participant's audio being played, 0...1, every 100 ms.
        case remoteAudioLevel(Double, participant: String)
        /// The participants speaking now, with their levels (0...1 of full scale): the
        /// RFC 6464 levels their senders stamped with voice activity in the last 500 ms.
        /// Every 200 ms while anyone speaks, and once when everyone fell silent.
        case speakingUsers([String: Double])
        /// The audio-file mix task played its last pass.
        case audioMixTaskCompleted(AudioFileMixTask)
        /// A WebM recording of `target` began writing to `path`.
        case recordStarted(RecordingTarget, path: String)
        /// A recording ended early (a full disk); what was written stays playable.
        case recordError(RecordingTarget, RecordingError)
        /// A recording was stopped and its file closed.
        case recordStopped(RecordingTarget, MediaRecorder.Summary)
        /// The recorded video's picture size changed (the recording goes on).
        case recordVideoSizeChanged(RecordingTarget, width: Int, height: Int)
        /// The capture path's processing could not start: the call goes on with the
        /// microphone's audio unprocessed (a warning, not a failure).
        case audioProcessingFailed(AudioProcessingError)
    }

    /// Whose media a per-user recording holds.
    public enum RecordingTarget: Sendable, Hashable, CustomStringConvertible {
        /// What this side sends.
        case local
        /// What the call's peer sends (participant "").
        case remote
        /// What one participant of a meeting leg sends.
        case participant(String)

        public var description: String {
            switch self {
            case .local: "local"
            case .remote: "remote"
            case .participant(let id): "participant \(id)"
            }
        }

        /// Whose media it is: nil for this side's own, "" for a call's peer.
        public var participantID: String? { participant }

        var participant: String? {
            switch self {
            case .local: nil
            case .remote: ""
            case .participant(let id): id
            }
        }
    }

    /// Final figures of both directions.
    public struct Summary: Sendable {
        public var sent: MediaSender.Statistics?
        public var received: MediaReceiver.Statistics?
        public var connectivity: ConnectivityResult?
        /// Why the TURN allocation failed, if it did (the call may still connect directly).
        public var relayFailure: String?
        /// ICE's checks and the relay's traffic, for telling why a path was or was not found.
        public var ice: ICEAgent.Statistics?
        public var relay: TURNStatistics?
        /// Why a direction stopped early, if one did.
        public var failure: String?
        /// What the capture path's processing did (nil when it never ran).
        public var audioProcessing: AudioProcessor.Statistics?
    }

    /// The pair ICE selected (the last one, after any change).
    public struct ConnectivityResult: Sendable, Hashable {
        public var pair: ICECandidatePair
        /// The peer's address media goes to.
        public var remote: SocketAddress { pair.remote.address }
        public var roundTripTime: Duration
    }

    /// What to announce to the peer.
    public let local: Endpoint
    /// Live mute, video pause and bitrate cap.
    public let controls = SenderControls()

    let transport: PeerTransport
    let parts: Parts
    /// Set once, to end both threads: the one flag kept out of `state`. Each thread polls
    /// it on every pass of its loop (the receiving thread at each wake-up, before it waits
    /// for datagrams; the sending thread at each frame), where the lock would be one more
    /// acquisition per pass, contended by the other thread's, for a flag that only ever
    /// goes from false to true.
    let stopping = Atomic<Bool>(false)
    /// What the app's calls and both threads share (see `State`), behind one lock; its
    /// condition is what the synchronous `stop` and `wait` wait on.
    let state = Monitor(State())
    let localAudioChannels: Int
    let audioStream: SendStreamID
    let videoStream: SendStreamID?
    /// A simulcast video's streams, lowest first (the first is `videoStream`); empty for one.
    let videoLayerStreams: [SendStreamID]
    /// Payload types and MIDs of both kinds, both ways.
    let streamPlan: StreamPlan
    /// The WebRTC peer's offer, this side's answer and certificate, when the session
    /// answered one (`init(configuration:answering:)`); nil for SDES sessions.
    let webRTC: WebRTCLeg?
    let playbackMix = PlaybackMixRing()
    /// The capture path's processing and its settings.
    let processing: CaptureProcessing

    /// One remote participant's streams and what the app set for it.
    struct ParticipantState: Sendable {
        var audio: ReceiveStreamID?
        var video: ReceiveStreamID?
        /// Playback gain, 0...1 (the app's per-user volume).
        var volume = 1.0
        var keyframeWanted = false
    }

    /// The sources and sinks, handed from the caller's thread to the session's two
    /// threads: the sender thread alone uses `audio` and `video`, the receiver thread alone
    /// `audioSink`; `start` runs once. That single ownership is what makes this safe.
    final class Parts: @unchecked Sendable {
        let configuration: Configuration
        init(_ configuration: Configuration) { self.configuration = configuration }
    }

    /// A sink handed from the app's thread to the receive thread, which alone uses it from
    /// then on (why the unchecked Sendable is safe).
    final class SinkHandoff: @unchecked Sendable {
        let sink: (any AudioSink)?
        init(_ sink: (any AudioSink)?) { self.sink = sink }
    }

    /// Binds the socket and draws this side's key, SSRCs and check token.
    /// - Throws: `MediaSessionError`: `.socket` when `host` cannot be bound, `.keying` when
    ///   `localKeying` is refused, `.streams` when `localAudioSSRC` is.
    public convenience init(configuration: Configuration) throws(MediaSessionError) {
        try self.init(configuration: configuration, answering: nil)
    }

    /// Binds the socket and draws this side's key (or, answering a WebRTC offer, makes its
    /// certificate and the answer), SSRCs and check token.
    init(configuration: Configuration, answering offer: WebRTCDescription?) throws(MediaSessionError) {
        localAudioChannels = configuration.audio.layout.count
        let socket: UDPSocket
        do throws(TransportError) {
            socket = try UDPSocket(bindTo: SocketAddress(host: configuration.host, port: 0))
        } catch {
            throw MediaSessionError(error)
        }
        let port = socket.localAddress.port
        let hosts = configuration.host == "0.0.0.0" ? LocalAddresses.ipv4() : [socket.localAddress.host]
        let candidates: [ICECandidate]
        do throws(TransportError) {
            candidates = try Self.hostCandidates(hosts, port: port)
        } catch {
            throw MediaSessionError(error)
        }
        var random = SystemRandomNumberGenerator()
        // ufrag and password: checks carrying them are long enough that an answer, even
        // with an IPv6 address, is never larger than the request.
        let credentials = ICECredentials.random(using: &random)
        let keying = configuration.localKeying ?? SRTPKeyingMaterial.random(profile: configuration.profile)
        var settings = MediaCore.Configuration()
        func draw() -> UInt32 {
            var ssrc: UInt32
            repeat { ssrc = UInt32.random(in: 1 ... .max, using: &random) } while ssrc == settings.rtcpSSRC
            return ssrc
        }
        let audioSSRC = configuration.localAudioSSRC ?? draw()
        var videoSSRC = configuration.video == nil ? nil : draw()
        while videoSSRC == audioSSRC { videoSSRC = draw() }
        var layerSizes = offer == nil ? configuration.video.map { Self.simulcastSizes(width: $0.width, height: $0.height, layers: configuration.simulcastLayers) } ?? [] : []
        if layerSizes.count < 2 { layerSizes = [] }
        var layerSSRCs = videoSSRC.map { [$0] } ?? []
        while layerSSRCs.count < layerSizes.count {
            let ssrc = draw()
            if ssrc != audioSSRC && !layerSSRCs.contains(ssrc) { layerSSRCs.append(ssrc) }
        }
        var configuration = configuration
        let plan: StreamPlan
        if let offer {
            let leg = try WebRTCLeg(answering: offer, configuration: configuration, credentials: credentials, candidates: candidates,
                                    audioSSRC: audioSSRC, videoSSRC: videoSSRC, cname: settings.cname)
            plan = leg.plan
            webRTC = leg
            if !leg.sendsVideo {
                // The peer takes no video (or refused it): the camera stays off.
                configuration.video = nil
                videoSSRC = nil
            }
            settings.extensions = leg.extensions
            // The offerer controls ICE (RFC 8445 6.1.1), unless it is ICE-lite.
            configuration.iceControlling = leg.negotiation.remoteTransport.iceLite
        } else {
            plan = .engine
            webRTC = nil
            settings.outboundKeying = keying
        }
        streamPlan = plan
        processing = CaptureProcessing(settings: configuration.audioProcessing ?? Self.automaticProcessing(configuration),
                                       captureLayout: configuration.audio.layout, sampleRate: configuration.audioProcessingSampleRate)
        parts = Parts(configuration)
        settings.consent = configuration.consent
        let videoRate = configuration.video == nil ? 0 : configuration.videoBitrate
        settings.sendBandwidth = configuration.audioBitrate + videoRate
        settings.bandwidth = SendSideBandwidthEstimator.Configuration(
            startBitrate: configuration.audioBitrate + videoRate,
            minimumBitrate: configuration.audioBitrate + (videoRate > 0 ? 50_000 : 0), maximumBitrate: configuration.audioBitrate + videoRate)
        let core: MediaCore
        do throws(SRTPError) {
            core = try MediaCore(configuration: settings)
        } catch {
            throw MediaSessionError(error)
        }
        core.localICE = credentials
        do throws(MediaCoreError) {
            audioStream = try core.addSendStream(plan.audio.send(ssrc: audioSSRC))
            if layerSizes.isEmpty {
                videoStream = try videoSSRC.map { (ssrc) throws(MediaCoreError) in try core.addSendStream(plan.video.send(ssrc: ssrc)) }
                videoLayerStreams = []
            } else {
                // One media clock for every layer: a switch between them at the server keeps
                // the receiver's timestamps exact.
                let offset = UInt32.random(in: 0 ... .max, using: &random)
                var streams: [SendStreamID] = []
                for ssrc in layerSSRCs {
                    var stream = plan.video.send(ssrc: ssrc)
                    stream.timestampOffset = offset
                    streams.append(try core.addSendStream(stream))
                }
                videoStream = streams[0]
                videoLayerStreams = streams
            }
        } catch {
            throw MediaSessionError(error)
        }
        var endpoint = Endpoint(candidates: candidates, keying: keying, audioSSRC: audioSSRC, videoSSRC: videoSSRC, ice: credentials)
        endpoint.videoLayers = zip(layerSSRCs, layerSizes).map { Endpoint.SimulcastLayer(ssrc: $0, width: $1.width, height: $1.height) }
        local = endpoint
        transport = PeerTransport(core: core, sockets: [socket])
    }

    /// Whether this side sends video (a video source was configured).
    public var sendsVideo: Bool { local.videoSSRC != nil }

    /// The simulcast sizes of a `width`×`height` video in `layers` layers, lowest first:
    /// each half the next (rounded down to even), those under 160×90 left out.
    public static func simulcastSizes(width: Int, height: Int, layers: Int) -> [(width: Int, height: Int)] {
        var sizes: [(width: Int, height: Int)] = []
        for step in 0..<max(1, min(layers, 3)) {
            let size = (width: (width >> step) & ~1, height: (height >> step) & ~1)
            guard step == 0 || (size.width >= 160 && size.height >= 90) else { break }
            sizes.insert(size, at: 0)
        }
        return sizes
    }

    /// Plays remote audio on `sink` from the next block on (nil: nowhere); the old sink is closed.
    public func replaceAudioSink(_ sink: sending (any AudioSink)?) {
        let box = SinkHandoff(sink)
        state.withLock { $0.sinkHandoff = box }
    }

    /// Sends pictures from `source` from the next frame on (see `SenderControls.replaceVideoSource`).
    public func replaceVideoSource(_ source: sending any VideoSource) {
        controls.replaceVideoSource(source)
    }

    func emit(_ event: Event) { state.withLock { $0.eventHandler }?.call(event) }

    /// Starts both directions toward `remote` (whose media is participant ""); returns at
    /// once. Call once.
    ///
    /// - Parameter events: Gets every event, on the session's threads.
    /// - Throws: `MediaCoreError` when the peer's key is refused or its SSRCs collide with ours.
    public func start(remote: Endpoint, events: @escaping @Sendable (Event) -> Void) throws(MediaCoreError) {
        try begin(remote: remote, participants: [Participant(id: "", audioSSRC: remote.audioSSRC, videoSSRC: remote.videoSSRC)],
                  events: events)
    }

    /// Starts a meeting leg: both directions toward a forwarding server at `server` (its
    /// candidates, downlink key and check token), receiving `participants` (more come with
    /// `addParticipant`); returns at once. Call once.
    ///
    /// - Throws: `MediaCoreError` when the server's key is refused or an SSRC collides.
    public func join(server: Endpoint, participants: [Participant], events: @escaping @Sendable (Event) -> Void) throws(MediaCoreError) {
        state.withLock { $0.meetingLeg = true }
        try begin(remote: server, participants: participants, events: events)
    }

    /// This side's host candidates: every address but loopback, unless loopback is all
    /// there is (a session bound to 127.0.0.1), in the order given.
    static func hostCandidates(_ hosts: [String], port: Int) throws(TransportError) -> [ICECandidate] {
        var addresses: [SocketAddress] = []
        for host in hosts { addresses.append(try SocketAddress(host: host, port: port)) }
        let routable = addresses.filter { !$0.isLoopback }
        return (routable.isEmpty ? addresses : routable).enumerated().map { index, address in
            ICECandidate.local(.host, address: address, localPreference: ICECandidate.localPreference(for: address, index: index))
        }
    }

    /// Starts ICE before the peer is known: the receiving thread runs (it answers checks)
    /// and server-reflexive candidates are gathered from `stunServers`, each reported as
    /// `localCandidate`, then `gatheringComplete`, to trickle to the peer. `start` or
    /// `join` follows with the peer's endpoint. Call at most once; `start` calls it when
    /// the app did not.
    ///
    /// - Parameter events: Gets every event from now on, on the session's threads.
    public func gather(events: @escaping @Sendable (Event) -> Void) {
        guard state.withLock({ $0.beginGathering(EventHandler(call: events)) }) else { return }
        let configuration = parts.configuration
        let hosts = local.candidates
        transport.withCore { core, now in
            core.startICE(local: local.ice, controlling: configuration.iceControlling, hosts: hosts,
                          stunServers: configuration.stunServers, turnServer: configuration.turnServer,
                          timeout: configuration.connectTimeout, now: now)
        }
        Thread.detachNewThread { [self] in
            ThreadName.set("media receive")
            receive()
            threadEnded()
        }
    }

    /// More of the peer's candidates (trickled through signaling); `complete`: the peer
    /// has no more. Candidates no one should send to (loopback unless this side is on
    /// loopback too, unspecified, multicast, link-local, the STUN servers themselves) are
    /// ignored.
    public func addRemoteCandidates(_ candidates: [ICECandidate], complete: Bool) {
        let usable = usableRemote(candidates)
        transport.withCore { core, now in core.addRemoteCandidates(usable, complete: complete, now: now) }
    }

    func usableRemote(_ candidates: [ICECandidate]) -> [ICECandidate] {
        let configuration = parts.configuration
        let (usable, ignored) = Self.sorted(candidates, localHosts: local.candidates,
                                            servers: configuration.stunServers + (configuration.turnServer.map { [$0.server] } ?? []),
                                            peerOnThisHost: configuration.peerOnThisHost)
        if !ignored.isEmpty { state.withLock { $0.ignore(ignored) } }
        return usable
    }

    /// The peer's candidates worth checking: not loopback (unless this side's hosts are
    /// all loopback, a session bound to 127.0.0.1, or the peer is on this host),
    /// unspecified, link-local or multicast, and never one of the STUN or TURN servers
    /// (checks there would reflect off them).
    static func usable(_ candidates: [ICECandidate], localHosts: [ICECandidate], servers: [SocketAddress],
                       peerOnThisHost: Bool = false) -> [ICECandidate] {
        sorted(candidates, localHosts: localHosts, servers: servers, peerOnThisHost: peerOnThisHost).usable
    }

    /// `usable`, with the candidates left out and why.
    static func sorted(_ candidates: [ICECandidate], localHosts: [ICECandidate], servers: [SocketAddress], peerOnThisHost: Bool)
        -> (usable: [ICECandidate], ignored: [(candidate: ICECandidate, reason: ICECandidate.Unusable)]) {
        let excluded = Set(servers)
        let loopbackAllowed = peerOnThisHost || (!localHosts.isEmpty && localHosts.allSatisfy { $0.address.isLoopback })
        var usable: [ICECandidate] = []
        var ignored: [(candidate: ICECandidate, reason: ICECandidate.Unusable)] = []
        for candidate in candidates {
            switch candidate.unusable(excluding: excluded) {
            case nil: usable.append(candidate)
            case .loopback? where loopbackAllowed: usable.append(candidate)
            case let reason?: ignored.append((candidate, reason))
            }
        }
        return (usable, ignored)
    }

    /// Why ICE had nothing to check, for its failure: each candidate left out and why, and
    /// what to change.
    func ignoredCandidatesExplained() -> String? {
        let ignored = state.withLock { $0.ignored }
        guard !ignored.isEmpty else { return nil }
        var text = "left out: " + ignored.map { "\($0.candidate.address) (\($0.reason.rawValue))" }.joined(separator: "; ")
        if ignored.contains(where: { $0.reason == .loopback }) {
            text += ". A server on 127.0.0.1 serves clients of its own host that reach it on a loopback address "
                + "(ws://127.0.0.1:PORT/); for any other client, run it on a routable address (--host 0.0.0.0)"
        }
        return text
    }

    private func begin(remote: Endpoint, participants: [Participant], events: @escaping @Sendable (Event) -> Void) throws(MediaCoreError) {
        try begin(events: events) { () throws(MediaCoreError) in
            let candidates = usableRemote(remote.candidates)
            try withCore { core, now throws(MediaCoreError) in
                try core.setInboundKeying(remote.keying)
                core.setRemoteICE(remote.ice, candidates: candidates, complete: false, now: now)
            }
            for participant in participants { try addParticipant(participant) }
        }
    }

    /// Starts the receiving thread (gathering, unless the app did), has `connect` tell the
    /// core about the peer, then starts the sending thread. Once: later calls do nothing.
    func begin(events: @escaping @Sendable (Event) -> Void, connect: () throws(MediaCoreError) -> Void) throws(MediaCoreError) {
        guard state.withLock({ $0.begin(EventHandler(call: events)) }) else { return }
        gather(events: events)
        try connect()
        state.withLock { $0.threads += 1 }
        Thread.detachNewThread { [self] in
            ThreadName.set("media send")
            send()
            threadEnded()
        }
    }

    /// Receives a participant's streams from now on (a member joined a meeting leg).
    /// - Throws: `MediaCoreError` when the ID is taken or an SSRC is already bound.
    public func addParticipant(_ participant: Participant) throws(MediaCoreError) {
        let rtx = parts.configuration.videoRTXPayloadType
        try addParticipant(participant.id, audio: participant.audioSSRC.map { streamPlan.audio.receive(ssrc: $0) },
                           video: participant.videoSSRC.map { ssrc in
                               var video = streamPlan.video.receive(ssrc: ssrc)
                               video.rtx = rtx.map { RTXStream(ssrc: RTXStream.ssrc(forVideo: ssrc), payloadType: $0) }
                               return video
                           })
    }

    /// Receives `audio` and `video` (either may be nil) as participant `id`'s.
    func addParticipant(_ id: String, audio: ReceiveStreamConfiguration?, video: ReceiveStreamConfiguration?) throws(MediaCoreError) {
        let exists = state.withLock { $0.participants[id] != nil }
        guard !exists else { throw MediaCoreError(.configuration, "participant '\(id)' is already in the session") }
        let added = try withCore { core, _ throws(MediaCoreError) in
            var entry = ParticipantState()
            if var stream = audio {
                stream.participant = id
                entry.audio = try core.addReceiveStream(stream)
            }
            if var stream = video {
                stream.participant = id
                do throws(MediaCoreError) {
                    entry.video = try core.addReceiveStream(stream)
                } catch {
                    entry.audio.map(core.removeReceiveStream)
                    throw error
                }
            }
            return entry
        }
        state.withLock { $0.add(id, added) }
    }

    /// `transport.withCore` for a body that throws only `MediaCoreError` (the transport's
    /// `rethrows` loses the type).
    func withCore<R: Sendable>(_ body: (MediaCore, Duration) throws(MediaCoreError) -> R) throws(MediaCoreError) -> R {
        let result = transport.withCore { core, now in Result { () throws(MediaCoreError) in try body(core, now) } }
        return try result.get()
    }

    /// Stops receiving a participant (a member left, or is muted for this side): its
    /// packets are counted as unknown from now on.
    public func removeParticipant(_ id: String) {
        guard let entry = state.withLock({ $0.remove(id) }) else { return }
        transport.withCore { core, _ in
            entry.audio.map(core.removeReceiveStream)
            entry.video.map(core.removeReceiveStream)
        }
    }

    /// The participants received now.
    public var participantIDs: [String] { state.withLock { $0.participants.keys.sorted() } }

    /// Sets a participant's playback volume, 0...1 (their audio in the mix).
    public func setVolume(_ volume: Double, participant id: String) {
        state.withLock { $0.participants[id]?.volume = max(0, min(1, volume)) }
    }

    /// A thread's last act: the last one wakes the synchronous waiters and resumes the
    /// async ones.
    private func threadEnded() {
        let waiting = state.withLockWaking { $0.threadEnded() }
        for waiter in waiting { waiter.resume() }
    }

    /// Stops both directions (BYE is sent, the jitter buffers drain) and returns the
    /// figures, without blocking a thread while the session's threads finish. Safe to call
    /// more than once and before `start`.
    @discardableResult
    public func stop() async -> Summary {
        stopping.store(true, ordering: .relaxed)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = state.withLock { state in
                if state.isRunning { state.ended.append(continuation) }
                return state.isRunning
            }
            if !running { continuation.resume() }
        }
        return finishStop()
    }

    /// Stops both directions (BYE is sent, the jitter buffers drain) and returns the figures.
    /// Safe to call more than once and before `start`. Blocks the calling thread until the
    /// session's threads end: from async code, `await stop()`.
    @available(*, noasync, message: "blocks the thread; use `await stop()`")
    @discardableResult
    public func stop() -> Summary {
        stopping.store(true, ordering: .relaxed)
        state.withLock(waitingFor: { !$0.isRunning }) { _ in }
        return finishStop()
    }

    /// What both stops do once the threads ended: the recordings still running are
    /// stopped (each reported), then the handler goes (no event comes after).
    private func finishStop() -> Summary {
        for (target, recorder) in state.withLock({ $0.takeRecordings() }) {
            emit(.recordStopped(target, recorder.stop()))
        }
        return state.withLock { $0.end() }
    }

    /// Waits until both directions have ended on their own (a source ran out, or the
    /// connectivity check failed), without stopping them. Blocks the calling thread.
    @available(*, noasync, message: "blocks the thread; call it from a thread of its own")
    public func wait() -> Summary {
        state.withLock(waitingFor: { !$0.isRunning }) { $0.summary }
    }
}

/// The level over 100 ms blocks, 0...1 of full scale, in RFC 6464's 1 dB steps: the same
/// measure senders stamp into their packets.
struct LevelMeter {
    private var sum = 0.0
    private var count = 0

    /// The level of the last 100 ms, as RFC 6464 quantizes it (1 dB steps), once 100 ms
    /// have come.
    mutating func add(_ samples: UnsafeBufferPointer<Int16>) -> Double? {
        for sample in samples { sum += Double(sample) * Double(sample) }
        return advance(samples.count)
    }

    /// `add` for `count` samples of silence (a frame without voice).
    mutating func addSilence(_ count: Int) -> Double? { advance(count) }

    /// Counts `samples` more; the level once 100 ms have come.
    private mutating func advance(_ samples: Int) -> Double? {
        count += samples
        guard count >= 4_800 else { return nil }
        defer {
            sum = 0
            count = 0
        }
        return AudioLevel(rms: (sum / Double(count)).squareRoot() / 32_768).amplitude
    }
}
