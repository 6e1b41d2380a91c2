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
            case .heldBack, .stale:
                break
            }
        }
    }

    func routeVideo(_ packet: RTPPacketView, of producer: Producer, id producerID: Producer.ID, now: Duration) {
        let payload = UnsafeRawBufferPointer(rebasing: packet.bytes[packet.payloadRange])
        guard let (descriptor, size) = try? VP8PayloadDescriptor.parse(payload) else { return }
        let layer = Int(min(descriptor.temporalLayerID ?? 0, 3))
        let isKeyframe = descriptor.startsFrame && size < payload.count && payload[size] & 0x01 == 0
        producer.meter(layer: layer, bytes: packet.bytes.count, now: now)
        producer.history?.store(packet, now: now)
        for consumerID in producer.consumers {
            guard let decision = consumers.update(consumerID, {
                $0.decideVideo(sequenceNumber: packet.sequenceNumber, descriptor: descriptor, layer: layer, isKeyframe: isKeyframe)
            }) else { continue }
            switch decision {
            case .muted:
                counters.mutedPacketsSkipped += 1
            case .heldBack(let needsKeyframe):
                counters.videoPacketsHeldBack += 1
                if needsKeyframe { requestKeyframe(producerID, now: now) }
            case .stale:
                break
            case .forward(let to):
                let sent = to.core.forward(to.send, packet: packet, sequenceNumber: to.sequenceNumber, isKeyframe: isKeyframe,
                                           now: now) { payload in
                    StreamRewriter.shiftVP8(payload, pictureShift: to.pictureShift, tl0Shift: to.tl0Shift)
                }
                if sent {
                    counters.packetsForwarded += 1
                    counters.bytesForwarded += packet.bytes.count
                }
            }
        }
    }

    /// Asks a producer's publisher for a keyframe, at most once per interval (a later wish
    /// is kept and sent when the interval has passed).
    func requestKeyframe(_ producerID: Producer.ID, now: Duration) {
        guard producers[producerID]?.wantsKeyframe(now: now, interval: configuration.keyframeRequestInterval) == true,
              let producer = producers[producerID] else { return }
        switch producer.origin {
        case .local(let transport):
            guard let receive = producer.receive, let core = transports[transport]?.core else { return }
            core.requestKeyframe(receive)
            counters.keyframeRequestsSent += 1
        case .remote(let owner):
            // Its owner merges this with its own subscribers' requests.
            workerMessages.append((owner, .keyframe(leg: producer.leg)))
        }
    }

    /// Subscribers' PLIs and FIRs (their leg's responder coalesced them) become requests
    /// to the publishers.
    func collectKeyframeRequests(of transport: Transport, now: Duration) {
        for consumerID in transport.consumers {
            guard let consumer = consumers[consumerID], consumer.kind == .video,
                  transport.core.shouldForceKeyframe(consumer.send, now: now) else { continue }
            requestKeyframe(consumer.producer, now: now)
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
            let history = producers[consumer.producer]?.history
            let rtt = transport.core.roundTripTime
            for sent in retransmissionRequests {
                switch map.lookUp(sent, now: now, rtt: rtt) {
                case .unknown:
                    counters.retransmissionsOutOfHistory += 1
                case .suppressed:
                    counters.retransmissionsSuppressed += 1
                case .resend(let original, let pictureShift, let tl0Shift, let first):
                    var sentAgain = false
                    let held = history?.withPacket(original, now: now) { packet in
                        sentAgain = transport.core.retransmit(consumer.send, original: packet, sequenceNumber: sent, now: now) { payload in
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
    /// the forwarded streams keep that mapping, so audio and video stay in sync there.
    func passSenderClocks(of transport: Transport) {
        for producerID in transport.producers {
            guard let producer = producers[producerID], let receive = producer.receive,
                  let clock = transport.core.senderClock(of: receive) else { continue }
            for other in producer.remoteWorkers {
                workerMessages.append((other, .senderClock(leg: producer.leg, kind: producer.kind, timestamp: clock.timestamp,
                                                           arrival: clock.arrival)))
            }
            for consumerID in producer.consumers {
                guard let consumer = consumers[consumerID] else { continue }
                consumer.subscriberCore.setSenderClock(consumer.send, timestamp: clock.timestamp, at: clock.arrival)
            }
        }
    }
}
