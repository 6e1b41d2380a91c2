extension MediaCore {
    /// Takes one datagram that arrived on the transport's socket `socket` from `source`: RTP
    /// goes to its stream (after SRTP), RTCP is authenticated and acted on, STUN checks are
    /// answered. Anything unusable is counted and dropped. The buffer is decrypted in place.
    ///
    /// - Returns: The decrypted packet when it belongs to a forwarding stream (valid until
    ///   the buffer is reused); nil otherwise.
    @discardableResult
    public func handleDatagram(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int = 0,
                               now: Duration) -> ForwardedPacket? {
        if paths.hasRelay, handleFromRelay(datagram, from: source, socket: socket, now: now) { return nil }
        let bytes = UnsafeRawBufferPointer(datagram)
        switch DatagramKind(bytes) {
        case .stun:
            handleSTUN(bytes, from: source, socket: socket, now: now)
        case .rtp:
            guard acceptsPath(source) else { return nil }
            return handleRTP(datagram, from: source, socket: socket, now: now)
        case .rtcp:
            guard acceptsPath(source) else { return nil }
            handleRTCP(datagram, from: source, socket: socket, now: now)
        default:
            counters.unknownDatagrams += 1
        }
        return nil
    }

    /// Whether media from `source` is taken (`PathController.accepts`); what is not is counted.
    private func acceptsPath(_ source: SocketAddress) -> Bool {
        guard paths.accepts(source) else {
            counters.foreignPathDatagrams += 1
            return false
        }
        return true
    }

    /// The stream a packet belongs to, by SSRC (in the clear even under SRTP), else a
    /// stream announced without SSRC that takes it by payload type.
    private func stream(ssrc: UInt32, payloadType: UInt8, socket: Int) -> ReceiveStreamState? {
        if let stream = receiveBySSRC[ssrc] {
            return stream.configuration.payloadType == payloadType && (stream.configuration.socket ?? socket) == socket ? stream : nil
        }
        return nil
    }

    private func handleRTP(_ datagram: UnsafeMutableRawBufferPointer, from source: SocketAddress, socket: Int,
                           now: Duration) -> ForwardedPacket? {
        guard datagram.count >= RTPPacketView.fixedHeaderSize else {
            counters.unknownStreamPackets += 1
            return nil
        }
        let payloadType = datagram[1] & 0x7F
        let ssrc = UnsafeRawBufferPointer(datagram).uint32(at: 8)
        var target = stream(ssrc: ssrc, payloadType: payloadType, socket: socket)
        var binding = false
        if target == nil {
            if receiveBySSRC[ssrc] == nil, sendStreams.contains(where: { $0.configuration.ssrc == ssrc }) {
                // One of this side's own SSRCs coming back: a loop or a collision, never media to play.
                counters.ssrcCollisions += 1
                return nil
            }
            guard receiveBySSRC[ssrc] == nil, let open = openStream(payloadType: payloadType, socket: socket) else {
                counters.unknownStreamPackets += 1
                return nil
            }
            target = open
            binding = open.configuration.mid != nil
        }
        guard let stream = target else { return nil }
        var length = datagram.count
        if let key = stream.inboundKey {
            do {
                length = try inbound[key].context.unprotect(datagram, length: length)
            } catch {
                switch error.code {
                case .authenticationFailed: stream.statistics.authenticationFailures += 1
                case .replayed, .tooOld: stream.statistics.replays += 1
                default: stream.statistics.malformedPackets += 1
                }
                return nil
            }
        }
        let packet: RTPPacketView
        do {
            packet = try RTPPacketView(UnsafeRawBufferPointer(rebasing: datagram[0..<length]))
        } catch {
            stream.statistics.malformedPackets += 1
            return nil
        }
        let receiving: ReceiveStreamState
        if binding {
            guard let bound = bind(packet, ssrc: ssrc, payloadType: payloadType, socket: socket) else { return nil }
            receiving = bound
        } else {
            receiving = stream
        }
        lastAuthenticatedArrival = now
        receive(packet, on: receiving, from: source, socket: socket, now: now)
        return receiving.configuration.forwarding ? ForwardedPacket(stream: receiving.id, packet: packet) : nil
    }

    /// A stream announced without SSRC that takes packets of payload type `payloadType`:
    /// one with a MID binds by it, one without takes any SSRC (an SDP without `a=ssrc`).
    private func openStream(payloadType: UInt8, socket: Int) -> ReceiveStreamState? {
        func takes(_ stream: ReceiveStreamState) -> Bool {
            stream.configuration.ssrc == nil && stream.configuration.payloadType == payloadType
                && (stream.configuration.socket ?? socket) == socket
        }
        return receiveStreams.first { takes($0) && $0.configuration.mid == nil }
            ?? receiveStreams.first { takes($0) && $0.configuration.mid != nil }
    }

    /// Binds an authenticated packet of an unknown SSRC to the stream its MID names; a MID
    /// bound to another SSRC already is a collision (counted, dropped).
    private func bind(_ packet: RTPPacketView, ssrc: UInt32, payloadType: UInt8, socket: Int) -> ReceiveStreamState? {
        guard let id = configuration.extensions.id(for: RTPExtensionMap.midURI), let value = packet.extensionValue(id: id),
              let stream = receiveStreams.first(where: { candidate in
                  guard let mid = candidate.configuration.mid, mid.utf8.count == value.count,
                        candidate.configuration.payloadType == payloadType else { return false }
                  return mid.utf8.elementsEqual(value)
              }) else {
            counters.unknownStreamPackets += 1
            return nil
        }
        guard stream.ssrc == nil else {
            counters.ssrcCollisions += 1
            return nil
        }
        stream.ssrc = ssrc
        stream.statistics.ssrc = ssrc
        receiveBySSRC[ssrc] = stream
        emit(.streamBound(stream.id, ssrc: ssrc))
        return stream
    }

    private func receive(_ packet: RTPPacketView, on stream: ReceiveStreamState, from source: SocketAddress, socket: Int,
                         now: Duration) {
        stream.statistics.ssrc = packet.ssrc
        stream.source = (source, socket)
        if let id = configuration.extensions.id(for: RTPExtensionMap.transportSequenceNumberURI),
           let value = packet.extensionValue(id: id), value.count == 2 {
            feedback.packetReceived(transportSequenceNumber: value.uint16(at: 0), now: now)
            feedbackDestination = (source, socket)
        }
        if stream.configuration.kind == .audio, let id = configuration.extensions.id(for: RTPExtensionMap.audioLevelURI),
           let value = packet.extensionValue(id: id), value.count >= 1 {
            stream.audioLevel = (AudioLevel(byte: value[0]), now)
        }
        stream.reception.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                payloadBytes: packet.payloadRange.count, arrival: now)
        if nextReceiverReport == nil { nextReceiverReport = now + receiverReports.nextInterval(using: &random) }
        if stream.configuration.forwarding {
            stream.lastArrival = now
            // Relayed as is: only losses are tracked here, to NACK them to the sender.
            let sequence = stream.unwrapper.unwrap(packet.sequenceNumber)
            stream.nacks?.insert(sequence, now: now)
            return
        }
        if nextSynchronization == nil { nextSynchronization = now + .seconds(1) }
        switch stream.configuration.kind {
        case .audio:
            guard let jitter = stream.jitter else { return }
            let outcome = jitter.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                                        payload: packet.payload, arrival: now)
            guard outcome == .accepted || outcome == .restarted else { return }
            acceptedAudio?(stream.id, packet.payload, packet.timestamp)
            stream.lastArrival = now
            // The playout clock starts with the first packet (or after an idle spell), in
            // step with the other streams already playing, so one mix serves them all.
            if stream.nextPull == nil {
                stream.nextPull = receiveStreams.lazy.compactMap { $0 === stream ? nil : $0.nextPull }.min() ?? now
            }
        case .video:
            _ = stream.video?.insert(packet, arrival: now)
            processVideo(stream, now: now)
        }
    }

    /// Sends the NACKs a forwarding video stream has due.
    func processForwardingLosses(_ stream: ReceiveStreamState, now: Duration) {
        guard var nacks = stream.nacks, let media = stream.statistics.ssrc else { return }
        var lost = forwardingNACKs
        nacks.process(now: now, rtt: roundTripTime, into: &lost)
        stream.nacks = nacks
        if !lost.isEmpty {
            let nack = GenericNACK(senderSSRC: configuration.rtcpSSRC, mediaSSRC: media, lostSequenceNumbers: lost[...])
            if queueFeedback(.genericNACK(nack), for: stream) { stream.statistics.nackSent += 1 }
        }
        forwardingNACKs = lost
    }

    /// Runs a video stream's recovery: frames it releases become events, NACK, PLI and
    /// FIR are queued.
    func processVideo(_ stream: ReceiveStreamState, now: Duration) {
        guard stream.video != nil else { return }
        stream.video?.process(now: now, into: &videoActions)
        defer { videoActions.removeAll(keepingCapacity: true) }
        for action in videoActions {
            switch action {
            case .decode(let frame):
                emit(.videoFrame(stream.id, frame))
            case .sendNACK(let sequenceNumbers):
                guard let media = stream.statistics.ssrc else { continue }
                // At most 256 numbers per NACK keeps each datagram well under the MTU.
                var start = 0
                while start < sequenceNumbers.count {
                    let chunk = sequenceNumbers[start..<min(sequenceNumbers.count, start + 256)]
                    let nack = GenericNACK(senderSSRC: configuration.rtcpSSRC, mediaSSRC: media, lostSequenceNumbers: chunk)
                    if queueFeedback(.genericNACK(nack), for: stream) { stream.statistics.nackSent += 1 }
                    start += 256
                }
            case .sendPLI:
                sendPictureLoss(stream)
            case .sendFIR(let sequenceNumber):
                guard let media = stream.statistics.ssrc else { continue }
                let fir = FullIntraRequest(senderSSRC: configuration.rtcpSSRC,
                                           entries: [FullIntraRequest.Entry(ssrc: media, sequenceNumber: sequenceNumber)])
                if queueFeedback(.fullIntraRequest(fir), for: stream) { stream.statistics.firSent += 1 }
            }
        }
    }

    private func sendPictureLoss(_ stream: ReceiveStreamState) {
        guard let media = stream.statistics.ssrc else { return }
        let pli = PictureLossIndication(senderSSRC: configuration.rtcpSSRC, mediaSSRC: media)
        if queueFeedback(.pictureLossIndication(pli), for: stream) { stream.statistics.pliSent += 1 }
    }

    /// Asks the sender of a video stream for a keyframe now (a recording starting mid-call).
    public func requestKeyframe(_ id: ReceiveStreamID) {
        guard let stream = receiveStream(id), stream.configuration.kind == .video else { return }
        sendPictureLoss(stream)
    }

    /// Records that the decoder found a frame of `id` corrupt: no delta frame follows until
    /// a keyframe, which is requested.
    public func decoderReportedCorruption(_ id: ReceiveStreamID, now: Duration) {
        guard let stream = receiveStream(id) else { return }
        stream.statistics.decodeErrors += 1
        stream.video?.decoderReportedCorruption(now: now)
        processVideo(stream, now: now)
    }

    /// Records a decoded frame of `id`, shown at `shownAt` (after any lip-sync hold).
    public func videoDecoded(_ id: ReceiveStreamID, timestamp: UInt32, isKeyframe: Bool, shownAt: Duration) {
        guard let stream = receiveStream(id) else { return }
        stream.statistics.framesDecoded += 1
        if isKeyframe { stream.statistics.keyFramesDecoded += 1 }
        if isLipSyncVideo(stream) {
            lipSyncs[stream.configuration.participant, default: LipSync()].videoShown(timestamp: timestamp, localTime: shownAt / .seconds(1))
        }
    }

    /// How long decoded pictures of `id` wait so they play no earlier than their audio.
    public func videoHold(for id: ReceiveStreamID) -> Duration {
        guard let stream = receiveStream(id), isLipSyncVideo(stream) else { return .zero }
        return lipSyncs[stream.configuration.participant]?.videoExtraDelay ?? .zero
    }

    /// How far a participant's video plays behind its audio (positive: video late), once
    /// both streams' sender reports and playout were seen.
    public func audioVideoOffset(participant: String = "") -> Duration? { lipSyncs[participant]?.offset }

    /// The extra delays lip sync gives a participant's audio and video.
    public func synchronizationDelays(participant: String = "") -> (audio: Duration, video: Duration) {
        guard let sync = lipSyncs[participant] else { return (.zero, .zero) }
        return (sync.audioExtraDelay, sync.videoExtraDelay)
    }

    /// Lip sync pairs each participant's first audio and first video stream.
    func isLipSyncAudio(_ stream: ReceiveStreamState) -> Bool {
        receiveStreams.first { $0.configuration.kind == .audio && $0.configuration.participant == stream.configuration.participant } === stream
    }

    func isLipSyncVideo(_ stream: ReceiveStreamState) -> Bool {
        receiveStreams.first { $0.configuration.kind == .video && $0.configuration.participant == stream.configuration.participant } === stream
    }

    /// Moves each participant's lip sync one step: audio gets extra jitter-buffer delay when
    /// video lags, video is held back when audio lags.
    func synchronize() {
        for (participant, var sync) in lipSyncs {
            guard let audio = receiveStreams.first(where: { isLipSyncAudio($0) && $0.configuration.participant == participant }),
                  receiveStreams.contains(where: { isLipSyncVideo($0) && $0.configuration.participant == participant }) else { continue }
            let (audioDelay, _) = sync.update()
            audio.jitter?.synchronizationDelay = audioDelay
            lipSyncs[participant] = sync
        }
    }

    /// The RFC 6464 level a receive stream's sender stamped last, if within `window` (and
    /// the stream has not said BYE).
    public func recentAudioLevel(_ id: ReceiveStreamID, now: Duration, window: Duration = .milliseconds(500)) -> AudioLevel? {
        guard let stream = receiveStream(id), let level = stream.audioLevel, !stream.statistics.endedByGoodbye,
              now - level.at <= window else { return nil }
        return level.level
    }

    // MARK: Audio playout

    /// Plays every audio frame due by `now`, one playout tick at a time: `block` gets each
    /// playing stream's frame of the tick (decoded, concealment included), then `tickEnded`
    /// the tick's time. Streams play in step (a stream that starts joins the running
    /// tick), so a mixer sums the blocks of one tick. A stream whose buffer ran dry with no
    /// packet for three frames goes idle (no output) until packets come again, so a paused
    /// sender does not fill recordings with concealment.
    /// - Parameter scratch: Room for one frame of the widest stream (at least 60 ms stereo).
    public func playAudio(now: Duration, scratch: UnsafeMutableBufferPointer<Int16>,
                          block: (ReceiveStreamID, UnsafeBufferPointer<Int16>) throws -> Void,
                          tickEnded: (Duration) throws -> Void) rethrows {
        while let due = receiveStreams.lazy.compactMap(\.nextPull).min(), due <= now {
            var played = false
            for stream in receiveStreams where stream.nextPull == due {
                guard let jitter = stream.jitter else { continue }
                let period = stream.framePeriod
                if jitter.packetsHeld == 0 && now - stream.lastArrival > period * 3 {
                    stream.nextPull = nil
                    continue
                }
                if isLipSyncAudio(stream), let timestamp = jitter.playoutTimestamp {
                    lipSyncs[stream.configuration.participant, default: LipSync()].audioPlayed(timestamp: timestamp,
                                                                                               localTime: due / .seconds(1))
                }
                let result = jitter.pull(now: due, into: scratch)
                try block(stream.id, UnsafeBufferPointer(rebasing: scratch[0..<(result.samplesPerChannel * stream.configuration.layout.count)]))
                stream.nextPull = due + period
                played = true
            }
            if played { try tickEnded(due) }
        }
    }

    /// Pulls one frame of an audio stream at `now` on the caller's own playout clock (a
    /// simulation's, or a mixer that paces itself), with no idle rule: concealment when
    /// nothing is there.
    /// - Returns: what the jitter buffer produced, or nil for an unknown or video stream.
    public func pullAudio(_ id: ReceiveStreamID, now: Duration, into output: UnsafeMutableBufferPointer<Int16>) -> AudioJitterBuffer.PullResult? {
        guard let stream = receiveStream(id), let jitter = stream.jitter else { return nil }
        return jitter.pull(now: now, into: output)
    }

    /// Plays out what the jitter buffers still hold (at most 10 s each), so the end of a
    /// stream is not lost; every stream goes idle.
    public func drainAudio(scratch: UnsafeMutableBufferPointer<Int16>,
                           block: (ReceiveStreamID, UnsafeBufferPointer<Int16>) throws -> Void) rethrows {
        for stream in receiveStreams {
            guard let jitter = stream.jitter, var due = stream.nextPull else { continue }
            var frames = 0
            while jitter.packetsHeld > 0 && frames < 500 {
                let result = jitter.pull(now: due, into: scratch)
                try block(stream.id, UnsafeBufferPointer(rebasing: scratch[0..<(result.samplesPerChannel * stream.configuration.layout.count)]))
                due += stream.framePeriod
                frames += 1
            }
            stream.nextPull = nil
        }
    }
}
