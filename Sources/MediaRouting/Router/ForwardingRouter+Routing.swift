import MediaEngine

// The per-packet path: a producer's packet, decrypted once on its transport, goes to each
// of its consumers, which decide what their subscriber gets; the subscriber's transport
// protects and queues it. No allocation.
extension ForwardingRouter {
    func routeAudio(_ packet: RTPPacketView, of producer: Producer, now: Duration) {
        if let id = producer.audioLevelID, let value = packet.extensionValue(id: id),
           value.count >= 1, AudioLevel(byte: value[0]).voiceActivity {
            producer.spokeAt = now
        }
        for consumerID in producer.consumers {
            guard let decision = consumers.update(consumerID, { $0.decideAudio(sequenceNumber: packet.sequenceNumber) }) else { continue }
            switch decision {
            case .muted:
                counters.mutedPacketsSkipped += 1
            case .forward(let to):
                if to.core.forward(to.send, packet: packet, sequenceNumber: to.sequenceNumber, now: now) {
                    counters.packetsForwarded += 1
                    counters.bytesForwarded += packet.bytes.count
                }
            case .heldBack, .stale, .otherLayer:
                break
            }
        }
    }

    /// A video packet of the producer's layer `spatial` (0 unless simulcast).
    func routeVideo(_ packet: RTPPacketView, of producer: Producer, id producerID: Producer.ID, spatial: Int, now: Duration) {
        let payload = UnsafeRawBufferPointer(rebasing: packet.bytes[packet.payloadRange])
        guard let (descriptor, size) = try? VP8PayloadDescriptor.parse(payload) else { return }
        let layer = Int(min(descriptor.temporalLayerID ?? 0, 3))
        let isKeyframe = descriptor.startsFrame && size < payload.count && payload[size] & 0x01 == 0
        producer.meter(spatial: spatial, layer: layer, bytes: packet.bytes.count, now: now)
        producer.layers[spatial].history?.store(packet, now: now)
        if isKeyframe, producer.isSimulcast {
            learnSize(of: producer, spatial: spatial, keyframe: UnsafeRawBufferPointer(rebasing: payload[size...]))
        }
        for consumerID in producer.consumers {
            guard let decision = consumers.update(consumerID, {
                $0.decideVideo(packet, spatial: spatial, descriptor: descriptor, layer: layer, isKeyframe: isKeyframe, of: producer, now: now)
            }) else { continue }
            switch decision {
            case .muted:
                counters.mutedPacketsSkipped += 1
            case .heldBack(let needsKeyframe):
                counters.videoPacketsHeldBack += 1
                if needsKeyframe { requestKeyframe(producerID, spatial: spatial, now: now) }
            case .stale, .otherLayer:
                break
            case .forward(let to):
                let sent = to.core.forward(to.send, packet: packet, sequenceNumber: to.sequenceNumber, timestampShift: to.timestampShift,
                                           isKeyframe: isKeyframe, now: now) { payload in
                    StreamRewriter.shiftVP8(payload, pictureShift: to.pictureShift, tl0Shift: to.tl0Shift)
                }
                if sent {
                    counters.packetsForwarded += 1
                    counters.bytesForwarded += packet.bytes.count
                }
            }
        }
    }

    /// A simulcast layer's size as its keyframe says it (a browser announces none, and may
    /// change it with its capture); the caps of subscribers that said what they show follow.
    private func learnSize(of producer: Producer, spatial: Int, keyframe: UnsafeRawBufferPointer) {
        guard let (width, height) = VP8.keyframeSize(keyframe),
              width != producer.layers[spatial].width || height != producer.layers[spatial].height else { return }
        producer.layers[spatial].width = width
        producer.layers[spatial].height = height
        for consumerID in producer.consumers {
            consumers.update(consumerID) { consumer in
                if let shown = consumer.shownSize { consumer.spatialCap = producer.spatialCap(width: shown.width, height: shown.height) }
            }
        }
    }

    /// Asks a producer's publisher for a keyframe of its layer `spatial`, at most once per
    /// interval (a later wish is kept and sent when the interval has passed).
    func requestKeyframe(_ producerID: Producer.ID, spatial: Int = 0, now: Duration) {
        guard let producer = producers[producerID], spatial < producer.layers.count,
              producer.wantsKeyframe(spatial: spatial, now: now, interval: configuration.keyframeRequestInterval) else { return }
        switch producer.origin {
        case .local(let transport):
            guard let receive = producer.layers[spatial].receive, let core = transports[transport]?.core else { return }
            core.requestKeyframe(receive)
            counters.keyframeRequestsSent += 1
        case .remote(let owner):
            // Its owner merges this with its own subscribers' requests.
            workerMessages.append((owner, .keyframe(leg: producer.leg, layer: spatial)))
        }
    }

    /// Subscribers' PLIs and FIRs (their leg's responder coalesced them) become requests
    /// to the publishers.
    func collectKeyframeRequests(of transport: Transport, now: Duration) {
        for consumerID in transport.consumers {
            guard let consumer = consumers[consumerID], consumer.kind == .video,
                  transport.core.shouldForceKeyframe(consumer.send, now: now) else { continue }
            requestKeyframe(consumer.producer, spatial: consumer.currentSpatial, now: now)
        }
    }

    /// Subscribers' NACKs on video with RTX: each number found in what the subscriber was
    /// sent, and its publisher's packet still in the history, goes out again on the RTX
    /// stream, renumbered as the original was.
    func answerRetransmissionRequests(of transport: Transport, now: Duration) {
        for consumerID in transport.consumers {
            guard let consumer = consumers[consumerID], let map = consumer.retransmissions else { continue }
            retransmissionRequests.removeAll(keepingCapacity: true)
            transport.core.takeRetransmissionRequests(consumer.send) { retransmissionRequests.append($0) }
            guard !retransmissionRequests.isEmpty else { continue }
            let producer = producers[consumer.producer]
            let rtt = transport.core.roundTripTime
            for sent in retransmissionRequests {
                switch map.lookUp(sent, now: now, rtt: rtt) {
                case .unknown:
                    counters.retransmissionsOutOfHistory += 1
                case .suppressed:
                    counters.retransmissionsSuppressed += 1
                case .resend(let original, let spatial, let pictureShift, let tl0Shift, let first):
                    var sentAgain = false
                    let history = producer.flatMap { spatial < $0.layers.count ? $0.layers[spatial].history : nil }
                    let held = history?.withPacket(original, now: now) { packet in
                        sentAgain = transport.core.retransmit(consumer.send, original: packet, sequenceNumber: sent,
                                                              timestampShift: consumer.timestampShift(ofLayer: spatial), now: now) { payload in
                            StreamRewriter.shiftVP8(payload, pictureShift: pictureShift, tl0Shift: tl0Shift)
                        }
                    } ?? false
                    if !held { counters.retransmissionsOutOfHistory += 1 }
                    if sentAgain {
                        counters.rtxPacketsSent += 1
                        if first { counters.packetsRetransmittedOnRTX += 1 }
                    }
                }
            }
        }
    }

    /// A publisher's sender reports state its media clock; each subscriber's reports about
    /// the forwarded streams keep that mapping (for a simulcast video, the layer it gets,
    /// less that layer's timestamp shift), so audio and video stay in sync there.
    func passSenderClocks(of transport: Transport) {
        for producerID in transport.producers {
            guard let producer = producers[producerID] else { continue }
            if producer.isSimulcast { relateLayers(of: producer, on: transport.core) }
            for spatial in producer.layers.indices {
                guard let receive = producer.layers[spatial].receive, let clock = transport.core.senderClock(of: receive) else { continue }
                for other in producer.remoteWorkers {
                    workerMessages.append((other, .senderClock(leg: producer.leg, kind: producer.kind, layer: spatial,
                                                               timestamp: clock.timestamp, arrival: clock.arrival,
                                                               offset: producer.layers[spatial].timestampOffset)))
                }
                passSenderClock(of: producer, layer: spatial, timestamp: clock.timestamp, arrival: clock.arrival)
            }
        }
    }

    /// Layer `spatial`'s clock to the consumers that get that layer.
    func passSenderClock(of producer: Producer, layer spatial: Int, timestamp: UInt32, arrival: Duration) {
        for consumerID in producer.consumers {
            guard let consumer = consumers[consumerID], consumer.currentSpatial == spatial || !producer.isSimulcast else { continue }
            consumer.subscriberCore.setSenderClock(consumer.send, timestamp: timestamp &- consumer.timestampShift(ofLayer: spatial),
                                                   at: arrival)
        }
    }

    /// Each simulcast layer's timestamps against layer 0's, from their last sender reports
    /// (one sender clock: the NTP times relate them): what a switch between layers adds.
    private func relateLayers(of producer: Producer, on core: MediaCore) {
        guard let base = producer.layers[0].receive.flatMap({ core.senderMapping(of: $0) }) else { return }
        producer.layers[0].timestampOffset = 0
        for spatial in producer.layers.indices.dropFirst() {
            guard let mapping = producer.layers[spatial].receive.flatMap({ core.senderMapping(of: $0) }) else { continue }
            // Its timestamp at layer 0's report time, less layer 0's there.
            let seconds = Double(Int64(bitPattern: base.ntp &- mapping.ntp)) / 4_294_967_296
            let ticks = Int64((seconds * Double(VP8.clockRate)).rounded())
            producer.layers[spatial].timestampOffset = (mapping.rtpTimestamp &+ UInt32(truncatingIfNeeded: ticks)) &- base.rtpTimestamp
        }
    }
}
