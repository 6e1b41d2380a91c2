import MediaEngine

// Once a second per subscriber: its bandwidth estimate shared out among its videos; every
// speaking interval: who speaks in each meeting.
extension ForwardingRouter {
    /// One video's steps for the allocation, lowest first: its temporal layers, and for a
    /// simulcast video those of each live spatial layer in turn (a subscriber gets one
    /// spatial layer), up to `maximumSpatial`.
    struct Ladder {
        var spatial: [Int] = []
        var temporal: [Int] = []
        var rates: [Int] = []
        /// The step the consumer is at (-1: paused).
        var current = -1
    }

    func ladder(of consumer: Consumer, _ producer: Producer, maximumSpatial: Int, now: Duration) -> Ladder {
        var ladder = Ladder()
        for spatial in producer.layers.indices where spatial <= maximumSpatial && (!producer.isSimulcast || producer.isLive(spatial, now: now)) {
            for (layer, rate) in (producer.isSimulcast ? producer.rates(of: spatial) : producer.layers[spatial].rates).enumerated() {
                ladder.spatial.append(spatial)
                ladder.temporal.append(layer)
                ladder.rates.append(rate)
            }
        }
        if consumer.allowedLayer >= 0 {
            ladder.current = ladder.spatial.indices.last { index in
                ladder.spatial[index] < consumer.targetSpatial
                    || (ladder.spatial[index] == consumer.targetSpatial && ladder.temporal[index] <= consumer.currentLayer)
            } ?? -1
        }
        return ladder
    }

    /// Shares a subscriber's estimate out among its videos, most recent speakers first.
    /// A simulcast video moves up a spatial layer only on what the lowest estimate of the
    /// last `spatialSwitchHold` allows, and not within that long of its last move: an
    /// estimate that swings moves it down once and leaves it there.
    func allocate(_ subscriber: Transport.ID, now: Duration) {
        guard let transport = transports[subscriber] else { return }
        let estimate = transport.core.bandwidthEstimator.targetBitrate
        transport.recordEstimate(estimate, keeping: max(1, Int(configuration.spatialSwitchHold / configuration.allocationInterval)))
        let mine = transport.consumers.compactMap { id in consumers[id].map { (id: id, consumer: $0) } }
        let videos = mine.filter { $0.consumer.kind == .video && $0.consumer.enabled }
        guard !videos.isEmpty else { return }
        let audios = mine.filter { $0.consumer.kind == .audio && $0.consumer.enabled && publisher($0.consumer.publisher)?.publishing == true }
        let audio = audios.count * configuration.audioAllowance
        // A video whose rates are not measured yet keeps what it has (a simulcast video, while
        // the layer it is meant to get is not: a first look must not move it off the top).
        let ordered = videos.filter { entry in
            guard publisher(entry.consumer.publisher)?.publishing == true, let producer = producers[entry.consumer.producer] else { return false }
            let target = min(entry.consumer.targetSpatial, producer.layers.count - 1)
            if producer.isSimulcast, producer.rates(of: target).isEmpty,
               let arrival = producer.layers[target].lastArrival, now - arrival <= Producer.layerTimeout { return false }
            return producer.layers.indices.contains { !producer.rates(of: $0).isEmpty }
        }.sorted { first, second in
            let a = lastSpoke(first.consumer.publisher), b = lastSpoke(second.consumer.publisher)
            return a.time != b.time ? a.time > b.time : a.leg < b.leg
        }
        func share(_ budget: Int, cut: [Int]) -> [(ladder: Ladder, step: Int)] {
            let ladders = zip(ordered, cut).map { entry, maximum in
                ladder(of: entry.consumer, producers[entry.consumer.producer]!, maximumSpatial: maximum, now: now)
            }
            let steps = LayerAllocator.allocate(budget: budget, videos: zip(ordered, ladders).map { entry, ladder in
                let consumer = entry.consumer
                // A video within its pause hold cannot fit (and so holds the others at their base).
                let held = consumer.allowedLayer < 0 && consumer.pausedAt.map { now - $0 < configuration.pauseHold } == true
                return LayerAllocator.Video(layerRates: held || ladder.rates.isEmpty ? [Int.max / 4] : ladder.rates, current: ladder.current)
            })
            return Array(zip(ladders, steps))
        }
        let caps = ordered.map { $0.consumer.spatialCap }
        // What the lowest recent estimate allows each video: the highest spatial layer it may
        // move up to (none while its last move is recent).
        let floor = share(transport.lowestEstimate - audio, cut: caps)
        let cut = zip(ordered, floor).map { entry, lowest in
            let consumer = entry.consumer
            let settled = consumer.targetChangedAt.map { now - $0 >= configuration.spatialSwitchHold } ?? true
            let reach = lowest.step >= 0 ? lowest.ladder.spatial[lowest.step] : 0
            return min(consumer.spatialCap, settled ? max(consumer.targetSpatial, reach) : consumer.targetSpatial)
        }
        let results = share(estimate - audio, cut: cut)
        for (entry, result) in zip(ordered, results) {
            let (ladder, step) = result
            let spatial = step >= 0 && step < ladder.spatial.count ? ladder.spatial[step] : entry.consumer.targetSpatial
            let layer = step >= 0 && step < ladder.temporal.count ? ladder.temporal[step] : -1
            if let wanted = consumers[entry.id]?.allow(spatial: spatial, layer: layer, now: now) {
                requestKeyframe(entry.consumer.producer, spatial: wanted, now: now)
            }
        }
        updateProbe(of: transport, ordered: ordered, results: results, estimate: estimate, audio: audio, now: now)
    }

    // MARK: Probing

    /// Bytes of padding in one probe packet, and the most owed at once (a burst the pacing
    /// allows after a late timer).
    static let probePaddingLength = 255
    static let probeBurst = 4.0 * 300
    /// A probe's padding comes at least this often.
    static let probeInterval = Duration.milliseconds(10)
    /// The least step a probe pads for (b/s), and what it adds to every step: the
    /// allocation's margin and the audio allowance's slack must fit in the result.
    static let minimumProbeRate = 20_000
    /// The padding: the step's bitrate times this, plus `minimumProbeRate`.
    static let probeHeadroom = 1.25
    /// How long a probe pads before what the receiver acknowledged counts as its result
    /// (the acknowledged rate is measured over 500 ms of arrivals).
    static let probeCluster = Duration.seconds(1)

    /// Starts, keeps or ends the subscriber's probe after an allocation.
    ///
    /// A probe starts when the subscriber's most important video could go a step higher
    /// (within the size it shows) but the estimate leaves too little room, and no failed
    /// probe is recent. The step is the next temporal layer, or a whole spatial layer (its
    /// every temporal layer: a link that carries only the next one's base would move up
    /// and thin). Its padding adds that step's bitrate with the allocation's margin, at most
    /// the estimate again. After `probeCluster` without the estimate falling, what the
    /// receiver acknowledged is the probe's result and the estimate rises to it; the probe
    /// succeeds once the estimate makes room for the step (or the video moved up), fails
    /// when the video moves down, the estimate falls (`padProbe`), or after `probeDuration`.
    func updateProbe(of transport: Transport, ordered: [(id: Consumer.ID, consumer: Consumer)], results: [(ladder: Ladder, step: Int)],
                     estimate: Int, audio: Int, now: Duration) {
        var used = 0
        var wanted: (id: Consumer.ID, step: Int, rate: Int)?
        for (entry, result) in zip(ordered, results) {
            if result.step >= 0 && result.step < result.ladder.rates.count { used += result.ladder.rates[result.step] }
            guard wanted == nil, let producer = producers[entry.consumer.producer] else { continue }
            let full = ladder(of: entry.consumer, producer, maximumSpatial: entry.consumer.spatialCap, now: now)
            var next = result.step + 1
            guard next < full.rates.count else { continue }
            let current = result.step >= 0 ? full.rates[result.step] : 0
            if result.step < 0 || full.spatial[next] != full.spatial[result.step] {
                next = full.spatial.lastIndex(of: full.spatial[next]) ?? next
            }
            wanted = (entry.id, result.step, max(Self.minimumProbeRate, full.rates[next] - current))
        }
        let blocked = wanted.map { Double(estimate - audio - used) < Double($0.rate) * LayerAllocator.margin } ?? false
        if var probe = transport.probe {
            let step = zip(ordered, results).first { $0.0.id == probe.video }?.1.step
            if step.map({ $0 < probe.fromStep }) ?? true {
                endProbe(of: transport, succeeded: false, now: now)
            } else if let wanted, wanted.id == probe.video, wanted.step == probe.fromStep, blocked {
                if now - probe.started >= configuration.probeDuration {
                    endProbe(of: transport, succeeded: false, now: now)
                    return
                }
                if now - probe.started >= Self.probeCluster, let acknowledged = transport.core.bandwidthEstimator.acknowledgedBitrate {
                    transport.core.applyProbeResult(acknowledged, now: now)
                }
                probe.stepRate = wanted.rate
                transport.probe = probe
            } else {
                endProbe(of: transport, succeeded: true, now: now)
            }
            return
        }
        guard let wanted, blocked, now >= transport.nextProbe else { return }
        let carrier = consumers[wanted.id]?.retransmissions != nil ? wanted.id : transport.consumers.first { id in
            consumers[id].map { $0.kind == .video && $0.retransmissions != nil } == true
        }
        guard let carrier else { return }
        transport.probe = Transport.Probe(video: wanted.id, fromStep: wanted.step, padding: carrier, stepRate: wanted.rate,
                                          started: now, highestEstimate: estimate, lastPadding: now)
        counters.probesStarted += 1
    }

    /// Pads a probing subscriber's link up to now, or ends the probe as failed if the link
    /// did not carry it: its delay grows, or its estimate fell. Stop before the queue grows
    /// further. The delay is the first sign: an overuse lowers the estimate only to 0.85 ×
    /// what the receiver acknowledges, and the padding itself raised that to the link's
    /// rate, often above the estimate the probe started from, which then stays; a probe
    /// that waited for the fall would fill a narrow link's queue until it dropped.
    func padProbe(of transport: Transport, now: Duration) {
        guard var probe = transport.probe else { return }
        let estimator = transport.core.bandwidthEstimator
        let estimate = estimator.targetBitrate
        guard estimator.usage != .overusing, Double(estimate) >= 0.9 * Double(probe.highestEstimate),
              let carrier = consumers[probe.padding] else {
            endProbe(of: transport, succeeded: false, now: now)
            return
        }
        probe.highestEstimate = max(probe.highestEstimate, estimate)
        let rate = min(Double(probe.stepRate) * Self.probeHeadroom + Double(Self.minimumProbeRate), Double(estimate))
        probe.owed = min(probe.owed + rate / 8 * ((now - probe.lastPadding) / .seconds(1)), Self.probeBurst)
        probe.lastPadding = now
        while probe.owed >= Double(Self.probePaddingLength) {
            let sent = transport.core.sendPadding(carrier.send, paddingLength: Self.probePaddingLength, now: now)
            guard sent > 0 else { break }
            probe.owed -= Double(sent)
            counters.paddingPacketsSent += 1
            counters.paddingBytesSent += sent
        }
        transport.probe = probe
    }

    /// Ends the subscriber's probe: a success lets the next start at once, a failure waits
    /// the backoff, which doubles (up to `probeBackoffLimit`) until a probe succeeds.
    func endProbe(of transport: Transport, succeeded: Bool, now: Duration) {
        guard transport.probe != nil else { return }
        transport.probe = nil
        if transport.probeBackoff == .zero { transport.probeBackoff = configuration.probeBackoff }
        if succeeded {
            counters.probesSucceeded += 1
            transport.probeBackoff = configuration.probeBackoff
        } else {
            counters.probesFailed += 1
            transport.nextProbe = now + transport.probeBackoff
            transport.probeBackoff = min(transport.probeBackoff * 2, configuration.probeBackoffLimit)
        }
    }

    /// What `subscriber` shows of `publisher`'s video, in pixels: it gets the smallest
    /// simulcast layer at least about that size (90 % of it), or the largest there is; 0×0
    /// (not shown) gets the smallest. A single-stream video is unaffected. The next
    /// allocation applies it, at once.
    public func setVideoSize(subscriber subscriberLeg: UInt64, publisher publisherLeg: UInt64, width: Int, height: Int, now: Duration) {
        guard let subscriber = transportByLeg[subscriberLeg], let id = consumer(of: publisherLeg, kind: .video, for: subscriber),
              let consumer = consumers[id], let producer = producers[consumer.producer] else { return }
        consumers.update(id) { consumer in
            consumer.shownSize = (width, height)
            consumer.spatialCap = producer.spatialCap(width: width, height: height)
        }
        allocate(subscriber, now: now)
    }

    /// Which simulcast layers of `producer` this router's subscribers can use: those up to
    /// each enabled one's shown size, and the one each gets now; layer 0 always (the first
    /// picture, and where a congested subscriber goes).
    func wantedLayers(of producer: Producer) -> UInt8 {
        var mask: UInt8 = 1
        for consumerID in producer.consumers {
            guard let consumer = consumers[consumerID], consumer.enabled else { continue }
            let top = min(consumer.spatialCap, producer.layers.count - 1)
            mask |= UInt8((1 << (top + 1)) - 1)
            if consumer.forwardedSpatial >= 0 { mask |= 1 << consumer.forwardedSpatial }
        }
        return mask
    }

    /// Simulcast layers nobody can use, paused at their publishers after `layerPauseDelay`
    /// (reported as `videoLayers`); those wanted again resumed at once. Subscribers on other
    /// workers count: each tells the publisher's owner what its own can use.
    func checkWantedLayers(now: Duration) {
        producers.forEach { _, producer in
            guard producer.isSimulcast else { return }
            let local = wantedLayers(of: producer)
            guard case .local = producer.origin else {
                if case .remote(let owner) = producer.origin, producer.toldWantedLayers != local {
                    producer.toldWantedLayers = local
                    workerMessages.append((owner, .wantedLayers(leg: producer.leg, layers: local, worker: worker)))
                }
                return
            }
            let wanted = producer.remoteWantedLayers.values.reduce(local) { $0 | $1 }
            var active: UInt8 = 0
            for spatial in producer.layers.indices {
                // A layer is counted wanted from the first look: a publisher starts with all on.
                if wanted & 1 << spatial != 0 || producer.layers[spatial].wantedAt == nil { producer.layers[spatial].wantedAt = now }
                if let wantedAt = producer.layers[spatial].wantedAt, now - wantedAt < configuration.layerPauseDelay { active |= 1 << spatial }
            }
            guard active != producer.activeLayers else { return }
            producer.activeLayers = active
            reports.append(.videoLayers(leg: producer.leg, active: producer.layers.indices.map { active & 1 << $0 != 0 }))
        }
    }

    /// When a publisher last spoke (a day before it joined if never), and its leg ID to
    /// break ties.
    private func lastSpoke(_ leg: UInt64) -> (time: Duration, leg: UInt64) {
        guard let publisher = publisher(leg) else { return (.zero, 0) }
        let spoke = publisher.audio.flatMap { producers[$0]?.spokeAt }
        return (spoke ?? publisher.created - .seconds(86_400), leg)
    }

    func reportSpeaking(now: Duration) {
        var meetings: [UInt64: [String: Double]] = [:]
        transports.forEach { _, transport in
            guard transport.publishing else { return }
            guard let audio = transport.audio, let producer = producers[audio], let spoke = producer.spokeAt,
                  now - spoke <= configuration.speakingInterval,
                  let receive = producer.receive, let level = transport.core.recentAudioLevel(receive, now: now, window: configuration.speakingInterval) else {
                if meetings[transport.setup.meeting] == nil { meetings[transport.setup.meeting] = [:] }
                return
            }
            meetings[transport.setup.meeting, default: [:]][transport.setup.account] = level.amplitude
        }
        for meeting in meetings.keys.sorted() {
            let levels = meetings[meeting] ?? [:]
            let before = lastSpeaking[meeting] ?? [:]
            guard !levels.isEmpty || !before.isEmpty else { continue }
            lastSpeaking[meeting] = levels
            reports.append(.speaking(meeting: meeting, levels: levels))
        }
        for meeting in lastSpeaking.keys where meetings[meeting] == nil { lastSpeaking[meeting] = nil }
    }
}
