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
        for (entry, result) in zip(ordered, share(estimate - audio, cut: cut)) {
            let (ladder, step) = result
            let spatial = step >= 0 && step < ladder.spatial.count ? ladder.spatial[step] : entry.consumer.targetSpatial
            let layer = step >= 0 && step < ladder.temporal.count ? ladder.temporal[step] : -1
            if let wanted = consumers[entry.id]?.allow(spatial: spatial, layer: layer, now: now) {
                requestKeyframe(entry.consumer.producer, spatial: wanted, now: now)
            }
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
